"""`[[webhooks]]` and `public_url` from the config file, and the delivery policy from env vars.

Imports only the pure domain (the event names) and the configuration models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from clarion.config.files import http_url, positive
from clarion.config.spec import HttpUrl, NonEmptyString, Spec, event_names
from clarion.domain.webhooks import EVENTS as WEBHOOK_EVENTS


@dataclass(frozen=True, slots=True)
class Webhook:
    """`[[webhooks]]`: where to POST, the HMAC secret, and which events (default: all)."""

    url: str
    secret: str
    events: frozenset[str] = frozenset(WEBHOOK_EVENTS)


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """How deliveries are retried: the first retry waits `backoff_s`, each next one twice as
    long (at most `max_delay_s`), and a delivery is given up after `attempts` tries."""

    backoff_s: float = 2.0
    max_delay_s: float = 600.0
    attempts: int = 15
    timeout_s: float = 5.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WebhookDelivery:
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


class WebhookSpec(Spec):
    """`[[webhooks]] url = "...", secret = "...", events = [...]` (events default: all)."""

    table_says = "must be a table"

    url: HttpUrl = Field(default=None, validate_default=True)
    secret: NonEmptyString = Field(default=None, validate_default=True)
    events: Annotated[frozenset[str], event_names(WEBHOOK_EVENTS, list_known=True)] = frozenset(
        WEBHOOK_EVENTS
    )

    def webhook(self) -> Webhook:
        return Webhook(url=self.url, secret=self.secret, events=self.events)


def webhook_list(value: Any) -> Any:
    """`[[webhooks]]`: an array of tables."""
    if not isinstance(value, list):
        raise ValueError("must be an array of tables ([[webhooks]])")
    return value


def distinct_urls(hooks: tuple[WebhookSpec, ...]) -> tuple[WebhookSpec, ...]:
    for number, hook in enumerate(hooks, start=1):
        if any(h.url == hook.url for h in hooks[: number - 1]):
            raise ValueError(f"[{number}].url: {hook.url} is configured twice")
    return hooks


Webhooks = Annotated[
    tuple[WebhookSpec, ...], BeforeValidator(webhook_list), AfterValidator(distinct_urls)
]


def checked_public_url(value: str | None) -> str | None:
    return None if value is None else http_url(value, "public_url").rstrip("/")
