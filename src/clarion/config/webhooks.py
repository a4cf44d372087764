"""`[[webhooks]]` and `public_url` from the config file, and the delivery policy from env vars.

The table's shape is checked by its model (`clarion.config.tables`). Imports only the pure
domain (the event names) and `clarion.config.files`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clarion.config.files import http_url, positive
from clarion.domain.notification_events import EVENTS


@dataclass(frozen=True, slots=True)
class Webhook:
    """`[[webhooks]]`: where to POST, the HMAC secret, and which events (default: all)."""

    url: str
    secret: str
    events: frozenset[str] = frozenset(EVENTS)


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """How the notification outbox's deliveries (webhook, email, Slack) are retried, from
    the `CLARION_WEBHOOK_*` variables, whose names predate email: the first retry waits
    `backoff_s`, each next one twice as long (at most `max_delay_s`), and a delivery is given
    up after `attempts` tries."""

    backoff_s: float = 2.0
    max_delay_s: float = 600.0
    attempts: int = 15
    timeout_s: float = 5.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DeliveryPolicy:
        defaults = cls()
        backoff = positive(env, "CLARION_WEBHOOK_BACKOFF_S", defaults.backoff_s)
        attempts_raw = env.get("CLARION_WEBHOOK_ATTEMPTS") or str(defaults.attempts)
        try:
            attempts = int(attempts_raw)
        except ValueError as exc:
            raise ValueError(
                f"CLARION_WEBHOOK_ATTEMPTS must be an integer, got {attempts_raw!r}"
            ) from exc
        if attempts < 10:
            raise ValueError(f"CLARION_WEBHOOK_ATTEMPTS must be at least 10, got {attempts}")
        return cls(
            backoff_s=backoff,
            max_delay_s=max(backoff, positive(env, "CLARION_WEBHOOK_MAX_DELAY_S", 600.0)),
            attempts=attempts,
        )


def checked_public_url(value: str | None) -> str | None:
    return None if value is None else http_url(value, "public_url").rstrip("/")
