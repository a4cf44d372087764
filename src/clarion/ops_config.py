"""The operator's settings from the TOML file: the metrics token (and, as they come, retention
and telemetry). Imports only the configuration readers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clarion.config_files import read_config


@dataclass(frozen=True, slots=True)
class OperationsConfig:
    # With access control on, a bearer token that reads GET /metrics and nothing else.
    metrics_token: str | None = None
    # How long a scrape's database figures are reused (0: read on every scrape).
    metrics_cache_s: float = 5.0

    @classmethod
    def load(cls, config_file: str | None, env: Mapping[str, str]) -> OperationsConfig:
        """Top-level `metrics_token = "..."` (env CLARION_METRICS_TOKEN wins)."""
        data = read_config(Path(config_file)) if config_file else {}
        token = env.get("CLARION_METRICS_TOKEN") or data.get("metrics_token")
        if token is not None and (not isinstance(token, str) or len(token.strip()) < 16):
            raise ValueError(
                f"{config_file}: metrics_token must be a string of at least 16 characters"
            )
        return cls(metrics_token=token or None, metrics_cache_s=_seconds(env))


def _seconds(env: Mapping[str, str]) -> float:
    raw = env.get("CLARION_METRICS_CACHE_S") or "5"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"CLARION_METRICS_CACHE_S must be a number of seconds >= 0, got {raw!r}")
    return value
