"""The operator's settings: `metrics_token` and the metrics cache interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.config import Settings


def _load(tmp_path: Path, toml: str, **env: str) -> Settings:
    config = tmp_path / "clarion.toml"
    config.write_text(toml)
    return Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path), **env})


def test_the_metrics_token_comes_from_the_file_and_the_env_var_wins(tmp_path: Path) -> None:
    from_file = _load(tmp_path, 'metrics_token = "file-token-0123456789"\n')
    assert from_file.operations.metrics_token == "file-token-0123456789"
    from_env = _load(
        tmp_path, 'metrics_token = "file-token-0123456789"\n', CLARION_METRICS_TOKEN="e" * 20
    )
    assert from_env.operations.metrics_token == "e" * 20
    assert _load(tmp_path, "").operations.metrics_token is None


@pytest.mark.parametrize(
    "toml", ['metrics_token = "short"\n', "metrics_token = 12345678901234567\n"]
)
def test_a_short_or_non_text_metrics_token_is_refused(tmp_path: Path, toml: str) -> None:
    with pytest.raises(ValueError, match="metrics_token must be a string of at least 16"):
        _load(tmp_path, toml)


def test_the_metrics_cache_interval_defaults_to_five_seconds_and_may_be_zero(
    tmp_path: Path,
) -> None:
    assert _load(tmp_path, "").operations.metrics_cache_s == 5.0
    assert _load(tmp_path, "", CLARION_METRICS_CACHE_S="0").operations.metrics_cache_s == 0.0
    for bad in ("-1", "soon", "inf"):
        with pytest.raises(ValueError, match="CLARION_METRICS_CACHE_S"):
            _load(tmp_path, "", CLARION_METRICS_CACHE_S=bad)
