"""`[notifications.email]` and `[workspaces.NAME.notifications.email]` from the config file:
where email notifications go and which events they carry. A workspace's table overrides the
top-level one key by key for that workspace's tasks (say its own `to`, keep the server). The
password is read from the environment variable that `password_env` names, at start.

Imports only the pure domain (the event names, the address check) and `clarion.config.files`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clarion.config.files import notification_channels, read_config
from clarion.domain.emails import checked_address
from clarion.domain.webhooks import EVENTS

_KEYS = frozenset(
    {"host", "port", "starttls", "username", "password_env", "from", "to", "events", "timeout_s"}
)


@dataclass(frozen=True, slots=True)
class EmailChannel:
    """One destination: an SMTP server, the envelope and which events it wants. `key` names it
    in the outbox (`email:default`, `email:workspace:NAME`)."""

    key: str
    host: str
    port: int
    sender: str
    to: tuple[str, ...]
    starttls: bool = False
    username: str | None = None
    password: str | None = None
    events: frozenset[str] = frozenset(EVENTS)
    timeout_s: float = 30.0


@dataclass(frozen=True, slots=True)
class EmailSettings:
    default: EmailChannel | None = None
    workspaces: Mapping[str, EmailChannel] | None = None

    def channels(self) -> tuple[EmailChannel, ...]:
        found = [] if self.default is None else [self.default]
        return (*found, *(self.workspaces or {}).values())

    def channel_for(self, workspace: str) -> EmailChannel | None:
        """The channel a task of `workspace` notifies: its own, else the top-level one."""
        return (self.workspaces or {}).get(workspace, self.default)


def _channel(key: str, spec: Mapping[str, Any], where: str, env: Mapping[str, str]) -> EmailChannel:
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    host = spec.get("host")
    if not isinstance(host, str) or not host.strip() or any(c.isspace() for c in host):
        raise ValueError(f"{where}.host must be a host name")
    port = spec.get("port", 25)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"{where}.port must be a port number")
    starttls = spec.get("starttls", False)
    if not isinstance(starttls, bool):
        raise ValueError(f"{where}.starttls must be true or false")
    sender = checked_address(spec.get("from"), f"{where}.from")
    to = spec.get("to")
    if isinstance(to, str):
        to = [to]
    if not isinstance(to, list) or not to:
        raise ValueError(f"{where}.to must be a list of addresses")
    recipients = tuple(checked_address(a, f"{where}.to[{i}]") for i, a in enumerate(to))
    events = spec.get("events", list(EVENTS))
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise ValueError(f"{where}.events must be a list of event names")
    bad = sorted(set(events) - set(EVENTS))
    if bad:
        raise ValueError(f"{where}.events: unknown event(s) {', '.join(bad)}")
    username = spec.get("username")
    if username is not None and (not isinstance(username, str) or not username):
        raise ValueError(f"{where}.username must be a non-empty string")
    password = None
    password_env = spec.get("password_env")
    if password_env is not None:
        if not isinstance(password_env, str) or not password_env:
            raise ValueError(f"{where}.password_env must name an environment variable")
        password = env.get(password_env)
        if not password:
            raise ValueError(
                f"{where}.password_env: environment variable {password_env} is not set"
            )
    if (username is None) != (password is None):
        raise ValueError(f"{where}: username and password_env go together")
    timeout = spec.get("timeout_s", 30.0)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"{where}.timeout_s must be a positive number")
    return EmailChannel(
        key=key,
        host=host,
        port=port,
        sender=sender,
        to=recipients,
        starttls=starttls,
        username=username,
        password=password,
        events=frozenset(events),
        timeout_s=float(timeout),
    )


def load_email(config_file: str | None, env: Mapping[str, str]) -> EmailSettings:
    """The top-level channel and each workspace's (merged over it), or none configured."""
    if not config_file:
        return EmailSettings()
    path = Path(config_file)
    default, workspaces = notification_channels(
        read_config(path), path, "email", lambda key, spec, where: _channel(key, spec, where, env)
    )
    return EmailSettings(default=default, workspaces=workspaces)
