"""The operator's settings from the TOML file: the metrics token, retention, whether the
server migrates the schema. Imports only the configuration readers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clarion.config.files import read_config
from clarion.domain.waiting import parse_duration


@dataclass(frozen=True, slots=True)
class OperationsConfig:
    # With access control on, a bearer token that reads GET /metrics and nothing else.
    metrics_token: str | None = None
    # How long a scrape's database figures are reused (0: read on every scrape).
    metrics_cache_s: float = 5.0
    # `[retention]`: prune what finished more than `older_than` ago (0: never), every `every`.
    retention_older_than_s: float = 0.0
    retention_every_s: float = 3600.0
    # `clarion serve --no-migrate`: refuse an old schema instead of migrating it.
    migrate: bool = True

    @classmethod
    def load(cls, config_file: str | None, env: Mapping[str, str]) -> OperationsConfig:
        """Top-level `metrics_token = "..."` (env CLARION_METRICS_TOKEN wins)."""
        data = read_config(Path(config_file)) if config_file else {}
        token = env.get("CLARION_METRICS_TOKEN") or data.get("metrics_token")
        if token is not None and (not isinstance(token, str) or len(token.strip()) < 16):
            raise ValueError(
                f"{config_file}: metrics_token must be a string of at least 16 characters"
            )
        older_than, every = _retention(data.get("retention"), config_file)
        return cls(
            metrics_token=token or None,
            metrics_cache_s=_seconds(env),
            retention_older_than_s=older_than,
            retention_every_s=every,
        )


def _retention(spec: object, where: str | None) -> tuple[float, float]:
    """`[retention] older_than = "90d"`, optional `every = "1h"`."""
    if spec is None:
        return 0.0, 3600.0
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: [retention] must be a table")
    unknown = sorted(set(spec) - {"older_than", "every"})
    if unknown:
        raise ValueError(f"{where}: [retention]: unknown key(s) {', '.join(unknown)}")
    seconds = []
    for key, default in (("older_than", None), ("every", "1h")):
        raw = spec.get(key, default)
        if raw is None:
            seconds.append(0.0)
            continue
        try:
            seconds.append(float(parse_duration(raw).seconds))
        except ValueError as exc:
            raise ValueError(f"{where}: retention.{key} {exc}") from None
    return seconds[0], seconds[1]


def _seconds(env: Mapping[str, str]) -> float:
    raw = env.get("CLARION_METRICS_CACHE_S") or "5"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"CLARION_METRICS_CACHE_S must be a number of seconds >= 0, got {raw!r}")
    return value
