"""The operator's settings from the TOML file: the metrics token, retention, whether the
server migrates the schema. Built from the one parse of the file (`clarion.config.document`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clarion.config.defaults import MIN_SECRET

if TYPE_CHECKING:
    from clarion.config.document import ConfigDocument


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
    def load(cls, document: ConfigDocument, env: Mapping[str, str]) -> OperationsConfig:
        """Top-level `metrics_token = "..."` (env CLARION_METRICS_TOKEN wins) and
        `[retention] older_than = "90d"`, optional `every = "1h"`."""
        token = env.get("CLARION_METRICS_TOKEN") or document.metrics_token
        if token is not None and len(token.strip()) < MIN_SECRET:
            raise ValueError(
                f"CLARION_METRICS_TOKEN must be a string of at least {MIN_SECRET} characters"
            )
        retention = document.retention
        older_than = retention.older_than if retention else None
        every = retention.every if retention else None
        return cls(
            metrics_token=token or None,
            metrics_cache_s=_seconds(env),
            retention_older_than_s=0.0 if older_than is None else float(older_than.seconds),
            retention_every_s=3600.0 if every is None else float(every.seconds),
        )


def _seconds(env: Mapping[str, str]) -> float:
    raw = env.get("CLARION_METRICS_CACHE_S") or "5"
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"CLARION_METRICS_CACHE_S must be a number of seconds >= 0, got {raw!r}")
    return value
