"""`[[webhooks]]` and `public_url` from the config file, and the delivery policy from env vars.

Imports only the pure domain (the event names) and `clarion.config.files`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clarion.config.files import http_url, positive, read_config
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


def checked_public_url(value: str | None) -> str | None:
    return None if value is None else http_url(value, "public_url").rstrip("/")


def load_public_url(config_file: str | None) -> str | None:
    """Top-level `public_url = "https://clarion.example"` (the web UI's address in links)."""
    if not config_file:
        return None
    value = read_config(Path(config_file)).get("public_url")
    return None if value is None else http_url(value, f"{config_file}: public_url")


def load_webhooks(config_file: str | None) -> tuple[Webhook, ...]:
    """`[[webhooks]] url = "...", secret = "...", events = [...]` (events default: all)."""
    if not config_file:
        return ()
    path = Path(config_file)
    raw = read_config(path).get("webhooks", [])
    if not isinstance(raw, list):
        raise ValueError(f"{path}: webhooks must be an array of tables ([[webhooks]])")
    hooks: list[Webhook] = []
    for number, spec in enumerate(raw, start=1):
        where = f"{path}: webhooks[{number}]"
        if not isinstance(spec, dict):
            raise ValueError(f"{where} must be a table")
        unknown_keys = sorted(set(spec) - {"url", "secret", "events"})
        if unknown_keys:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown_keys)}")
        url = http_url(spec.get("url"), f"{where}.url")
        secret = spec.get("secret")
        if not isinstance(secret, str) or not secret:
            raise ValueError(f"{where}.secret must be a non-empty string")
        events = spec.get("events", list(WEBHOOK_EVENTS))
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise ValueError(f"{where}.events must be a list of event names")
        unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
        if unknown:
            raise ValueError(
                f"{where}.events: unknown event(s) {', '.join(unknown)}; "
                f"known: {', '.join(WEBHOOK_EVENTS)}"
            )
        if any(h.url == url for h in hooks):
            raise ValueError(f"{where}.url: {url} is configured twice")
        hooks.append(Webhook(url=url, secret=secret, events=frozenset(events)))
    return tuple(hooks)
