"""`[notifications.slack]`, `[workspaces.NAME.notifications.slack]` and `[slack.users]` from
the config file: which Slack channel a workspace's questions go to, with which bot, which
events, and which Clarion user each Slack user answers as. A workspace's table overrides the
top-level one key by key. The bot token, the signing secret and the optional app-level token
(Socket Mode) are read at start from the environment variables the table names.

The tables' shapes are checked by their model (`clarion.config.channels`); this module
builds the channels from the one parse of the file (`clarion.config.document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clarion.config.defaults import DEFAULT_SLACK_API_URL as DEFAULT_API_URL
from clarion.config.files import positive
from clarion.config.load import read_document
from clarion.domain.notification_events import EVENTS

if TYPE_CHECKING:
    from clarion.config.channels import SlackSpec
    from clarion.config.document import ConfigDocument

__all__ = ["DEFAULT_API_URL", "SlackChannel", "SlackSettings", "load_slack", "slack_settings"]


@dataclass(frozen=True, slots=True)
class SlackChannel:
    """One destination: a bot (its token), the channel it posts in, the events it wants, and
    the signing secret that proves an interaction came from its app. `key` names it in the
    outbox (`slack:default`, `slack:workspace:NAME`)."""

    key: str
    token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    channel: str
    api_url: str = DEFAULT_API_URL
    events: frozenset[str] = frozenset(EVENTS)
    # Socket Mode: the app-level token (`xapp-...`); None to receive interactions over HTTP.
    app_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class SlackSettings:
    default: SlackChannel | None = None
    workspaces: Mapping[str, SlackChannel] = field(default_factory=dict)
    # Slack user id -> Clarion user name.
    users: Mapping[str, str] = field(default_factory=dict)
    # How often open messages are looked at for a question that settled without an event
    # (superseded, cancelled, its session ended): `CLARION_SLACK_SWEEP_S`.
    sweep_s: float = 5.0
    # How often the answerer looks for queued clicks without being told of one
    # (`CLARION_SLACK_POLL_S`): a fallback, as a click queued on another replica wakes the
    # owner's answerer through the bus at once.
    poll_s: float = 10.0

    def channels(self) -> tuple[SlackChannel, ...]:
        found = [] if self.default is None else [self.default]
        return (*found, *self.workspaces.values())

    def channel_for(self, workspace: str) -> SlackChannel | None:
        """The channel a task of `workspace` notifies: its own, else the top-level one."""
        return self.workspaces.get(workspace, self.default)

    def by_key(self, key: str) -> SlackChannel | None:
        return next((c for c in self.channels() if c.key == key), None)


def _secret(name: str, key: str, where: str, env: Mapping[str, str]) -> str:
    value = env.get(name)
    if not value:
        raise ValueError(f"{where}.{key}: environment variable {name} is not set")
    return value


def _channel(key: str, spec: SlackSpec, where: str, env: Mapping[str, str]) -> SlackChannel:
    app_token = None
    if spec.app_token_env is not None:
        app_token = _secret(spec.app_token_env, "app_token_env", where, env)
    return SlackChannel(
        key=key,
        token=_secret(spec.bot_token_env, "bot_token_env", where, env),
        signing_secret=_secret(spec.signing_secret_env, "signing_secret_env", where, env),
        channel=spec.channel,
        # slack-sdk joins the method name onto the base URL, so it must end with a slash.
        api_url=spec.api_url if spec.api_url.endswith("/") else spec.api_url + "/",
        events=spec.events,
        app_token=app_token,
    )


def slack_settings(
    document: ConfigDocument, where: str | None, env: Mapping[str, str]
) -> SlackSettings:
    """The top-level channel, each workspace's (merged over it) and the user map; `where`
    names the file (None: there is none)."""
    sweep_s = positive(env, "CLARION_SLACK_SWEEP_S", 5.0)
    poll_s = positive(env, "CLARION_SLACK_POLL_S", 10.0)
    if where is None:
        return SlackSettings(sweep_s=sweep_s, poll_s=poll_s)
    base = document.notifications.slack
    default = None
    if base is not None:
        default = _channel("slack:default", base, f"{where}: notifications.slack", env)
    workspaces = {
        name: _channel(
            f"slack:workspace:{name}", own, f"{where}: workspaces.{name}.notifications.slack", env
        )
        for name, workspace in document.workspaces.items()
        if (own := workspace.notifications.slack) is not None
    }
    return SlackSettings(
        default=default,
        workspaces=workspaces,
        users=dict(document.slack.users),
        sweep_s=sweep_s,
        poll_s=poll_s,
    )


def load_slack(config_file: str | None, env: Mapping[str, str]) -> SlackSettings:
    """The Slack channels of the file at `config_file`, and the user map."""
    if not config_file:
        return slack_settings(read_document(None, env), None, env)
    return slack_settings(read_document(config_file, env), str(Path(config_file)), env)
