"""`[notifications.email]` and `[workspaces.NAME.notifications.email]` from the config file:
where email notifications go and which events they carry. A workspace's table overrides the
top-level one key by key for that workspace's tasks (say its own `to`, keep the server). The
password is read from the environment variable that `password_env` names, at start.

The tables' shapes are checked by their model (`clarion.config.channels`); this module
builds the channels from the one parse of the file (`clarion.config.document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clarion.config.load import read_document
from clarion.domain.notification_events import EVENTS

if TYPE_CHECKING:
    from clarion.config.channels import EmailSpec
    from clarion.config.document import ConfigDocument


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


def _channel(key: str, spec: EmailSpec, where: str, env: Mapping[str, str]) -> EmailChannel:
    password = None
    if spec.password_env is not None:
        password = env.get(spec.password_env)
        if not password:
            raise ValueError(
                f"{where}.password_env: environment variable {spec.password_env} is not set"
            )
    return EmailChannel(
        key=key,
        host=spec.host,
        port=spec.port,
        sender=spec.sender,
        to=spec.to,
        starttls=spec.starttls,
        username=spec.username,
        password=password,
        events=spec.events,
        timeout_s=spec.timeout_s,
    )


def email_settings(
    document: ConfigDocument, where: str | None, env: Mapping[str, str]
) -> EmailSettings:
    """The top-level channel and each workspace's (merged over it); `where` names the file
    (None: there is none)."""
    if where is None:
        return EmailSettings()
    base = document.notifications.email
    default = None
    if base is not None:
        default = _channel("email:default", base, f"{where}: notifications.email", env)
    workspaces = {
        name: _channel(
            f"email:workspace:{name}", own, f"{where}: workspaces.{name}.notifications.email", env
        )
        for name, workspace in document.workspaces.items()
        if (own := workspace.notifications.email) is not None
    }
    return EmailSettings(default=default, workspaces=workspaces)


def load_email(config_file: str | None, env: Mapping[str, str]) -> EmailSettings:
    """The email channels of the file at `config_file`, or none configured."""
    if not config_file:
        return EmailSettings()
    return email_settings(read_document(config_file, env), str(Path(config_file)), env)
