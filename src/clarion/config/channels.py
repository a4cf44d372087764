"""The notification channels' tables: `[notifications.email]`, `[notifications.slack]`, each
workspace's own (`[workspaces.NAME.notifications.KIND]`, merged key by key over the top-level
one before it is checked), and `[slack.users]`. Secrets are named here by the environment
variable that holds them, and read by `clarion.config.email` and `clarion.config.slack`.

Imports only the pure domain (event names, the address check) and the configuration models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, ConfigDict, Field, field_validator, model_validator

from clarion.config.defaults import DEFAULT_SLACK_API_URL
from clarion.config.spec import TABLE, HttpUrl, PositiveNumber, Spec, event_names
from clarion.domain.emails import checked_address
from clarion.domain.notification_events import EVENTS

KINDS = ("email", "slack")


def _address(value: Any, where: str = "") -> str:
    try:
        return checked_address(value, where)
    except ValueError as exc:
        raise ValueError(str(exc).lstrip()) from None


def _addresses(value: Any) -> tuple[str, ...]:
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value:
        raise ValueError("must be a list of addresses")
    return tuple(_address(a, f"[{i}]") for i, a in enumerate(value))


def _env_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("must name an environment variable")
    return value


EnvName = Annotated[str, BeforeValidator(_env_name)]
Events = Annotated[frozenset[str], event_names(EVENTS)]


def _required() -> Any:
    # Checked when absent too, so a missing key gets its validator's wording.
    return Field(default=None, validate_default=True)


class EmailSpec(Spec):
    """An SMTP server, the envelope, which events; the password from `password_env`."""

    table_says = "must be a table"

    host: str = _required()
    port: int = 25
    starttls: bool = False
    username: str | None = None
    password_env: EnvName | None = None
    sender: Annotated[str, BeforeValidator(_address)] = Field(alias="from")
    to: Annotated[tuple[str, ...], BeforeValidator(_addresses)] = _required()
    events: Events = frozenset(EVENTS)
    timeout_s: PositiveNumber = 30.0

    @model_validator(mode="before")
    @classmethod
    def _from_named(cls, data: Any) -> Any:
        # A missing `from` is reported under its key in the file, not the field's name.
        if isinstance(data, dict) and "from" not in data:
            return {**data, "from": None}
        return data

    @field_validator("host", mode="before")
    @classmethod
    def _host(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
            raise ValueError("must be a host name")
        return value

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
            raise ValueError("must be a port number")
        return value

    @field_validator("starttls", mode="before")
    @classmethod
    def _starttls(cls, value: Any) -> Any:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value

    @field_validator("username", mode="before")
    @classmethod
    def _username(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value:
            raise ValueError("must be a non-empty string")
        return value

    @model_validator(mode="after")
    def _login(self) -> Self:
        if (self.username is None) != (self.password_env is None):
            raise ValueError(": username and password_env go together")
        return self


class SlackSpec(Spec):
    """A bot (its token's variable), the channel it posts in, the signing secret's variable,
    optionally the app-level token's (Socket Mode), and which events."""

    table_says = "must be a table"

    bot_token_env: EnvName = _required()
    signing_secret_env: EnvName = _required()
    app_token_env: EnvName | None = None
    channel: str = _required()
    api_url: HttpUrl = DEFAULT_SLACK_API_URL
    events: Events = frozenset(EVENTS)

    @field_validator("channel", mode="before")
    @classmethod
    def _channel(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
            raise ValueError("must be a Slack channel id or name")
        return value


class NotificationsSpec(Spec):
    """`[notifications]` (and a workspace's): one table per channel kind."""

    model_config = ConfigDict(extra="ignore")
    unknown_says = None

    email: EmailSpec | None = None
    slack: SlackSpec | None = None


def _users_table(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(TABLE)
    return value


def _user_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a Clarion user name")
    return value


class SlackKeys(Spec):
    """`[slack]`: `users`, Slack user id -> Clarion user name."""

    users: Annotated[
        dict[str, Annotated[str, BeforeValidator(_user_name)]], BeforeValidator(_users_table)
    ] = Field(default_factory=dict)


def merged_notifications(data: Any) -> Any:
    """The file with each workspace's channel tables merged over the top-level ones, key by
    key, so each is checked whole where it is written. Shapes that are not tables are left
    for the models to refuse."""
    if not isinstance(data, Mapping):
        return data
    base = data.get("notifications", {})
    workspaces = data.get("workspaces", {})
    if not isinstance(base, Mapping) or not isinstance(workspaces, Mapping):
        return data
    merged: dict[str, Any] = {}
    for name, spec in workspaces.items():
        own = spec.get("notifications") if isinstance(spec, Mapping) else None
        if not isinstance(own, Mapping):
            merged[name] = spec
            continue
        channels = dict(own)
        for kind in KINDS:
            if isinstance(channels.get(kind), Mapping) and isinstance(base.get(kind, {}), Mapping):
                channels[kind] = {**base.get(kind, {}), **channels[kind]}
        merged[name] = {**spec, "notifications": channels}
    return {**data, "workspaces": merged}
