"""`[notifications.slack]`, `[workspaces.NAME.notifications.slack]` and `[slack.users]` from
the config file: which Slack channel a workspace's questions go to, with which bot, which
events, and which Clarion user each Slack user answers as. A workspace's table overrides the
top-level one key by key. The bot token, the signing secret and the optional app-level token
(Socket Mode) are read at start from the environment variables the table names.

Imports only the pure domain (the event names) and `clarion.config.files`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clarion.config.files import http_url, notification_channels, positive, read_config, table
from clarion.domain.webhooks import EVENTS

DEFAULT_API_URL = "https://slack.com/api/"
_KEYS = frozenset(
    {"bot_token_env", "signing_secret_env", "app_token_env", "channel", "api_url", "events"}
)


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


def _secret(spec: Mapping[str, Any], key: str, where: str, env: Mapping[str, str]) -> str:
    name = spec.get(key)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.{key} must name an environment variable")
    value = env.get(name)
    if not value:
        raise ValueError(f"{where}.{key}: environment variable {name} is not set")
    return value


def _channel(key: str, spec: Mapping[str, Any], where: str, env: Mapping[str, str]) -> SlackChannel:
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    token = _secret(spec, "bot_token_env", where, env)
    signing_secret = _secret(spec, "signing_secret_env", where, env)
    app_token = None
    if spec.get("app_token_env") is not None:
        app_token = _secret(spec, "app_token_env", where, env)
    channel = spec.get("channel")
    if not isinstance(channel, str) or not channel.strip() or any(c.isspace() for c in channel):
        raise ValueError(f"{where}.channel must be a Slack channel id or name")
    api_url = http_url(spec.get("api_url", DEFAULT_API_URL), f"{where}.api_url")
    events = spec.get("events", list(EVENTS))
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise ValueError(f"{where}.events must be a list of event names")
    bad = sorted(set(events) - set(EVENTS))
    if bad:
        raise ValueError(f"{where}.events: unknown event(s) {', '.join(bad)}")
    return SlackChannel(
        key=key,
        token=token,
        signing_secret=signing_secret,
        channel=channel,
        # slack-sdk joins the method name onto the base URL, so it must end with a slash.
        api_url=api_url if api_url.endswith("/") else api_url + "/",
        events=frozenset(events),
        app_token=app_token,
    )


def _users(data: Mapping[str, Any], path: Path) -> dict[str, str]:
    slack = table(data.get("slack", {}), f"{path}: [slack]")
    unknown = sorted(set(slack) - {"users"})
    if unknown:
        raise ValueError(f"{path}: slack: unknown key(s) {', '.join(unknown)}")
    users = table(slack.get("users", {}), f"{path}: [slack.users]")
    for slack_id, name in users.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{path}: slack.users.{slack_id} must be a Clarion user name")
    return {str(k): str(v) for k, v in users.items()}


def load_slack(config_file: str | None, env: Mapping[str, str]) -> SlackSettings:
    """The top-level channel, each workspace's (merged over it) and the user map."""
    sweep_s = positive(env, "CLARION_SLACK_SWEEP_S", 5.0)
    poll_s = positive(env, "CLARION_SLACK_POLL_S", 10.0)
    if not config_file:
        return SlackSettings(sweep_s=sweep_s, poll_s=poll_s)
    path = Path(config_file)
    data = read_config(path)
    default, workspaces = notification_channels(
        data, path, "slack", lambda key, spec, where: _channel(key, spec, where, env)
    )
    return SlackSettings(
        default=default,
        workspaces=workspaces,
        users=_users(data, path),
        sweep_s=sweep_s,
        poll_s=poll_s,
    )
