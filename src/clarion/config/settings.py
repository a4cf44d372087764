"""Settings, read once from flags, env vars and the TOML config file: the file is parsed once
(`clarion.config.document`) and every part is built from that parse. Imports only the
configuration modules beside it, which import only the pure domain."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from clarion.config.agents import AgentProfile, agent_profiles
from clarion.config.cluster import redirect_to_owner
from clarion.config.email import EmailSettings, email_settings
from clarion.config.files import flag, http_url, positive
from clarion.config.links import AnswerLinkSettings, answer_links
from clarion.config.load import read_document
from clarion.config.ops import OperationsConfig
from clarion.config.repositories import RepositorySettings, repository_settings
from clarion.config.sandbox import hidden_paths
from clarion.config.slack import SlackSettings, slack_settings
from clarion.config.telemetry import TelemetrySettings
from clarion.config.webhooks import DeliveryPolicy, Webhook, checked_public_url
from clarion.domain.waiting import WaitingPolicy


@dataclass(frozen=True, slots=True)
class Timeouts:
    """All in seconds; every one overridable by its env var."""

    clarification_wait: float = 7200.0
    keepalive: float = 20.0
    resume_accept: float = 30.0
    live_confirm: float = 35.0
    watchdog: float = 15.0
    persist: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Timeouts:
        # Defaults come from an instance: with slots=True the class attributes are slot
        # descriptors, not the declared default values.
        defaults = cls()

        def read(name: str, default: float) -> float:
            return positive(env, name, default)

        return cls(
            clarification_wait=read("CLARION_CLARIFICATION_WAIT_S", defaults.clarification_wait),
            keepalive=read("CLARION_KEEPALIVE_S", defaults.keepalive),
            resume_accept=read("CLARION_RESUME_ACCEPT_S", defaults.resume_accept),
            live_confirm=read("CLARION_LIVE_CONFIRM_S", defaults.live_confirm),
            watchdog=read("CLARION_WATCHDOG_S", defaults.watchdog),
            persist=read("CLARION_PERSIST_S", defaults.persist),
        )


def clarion_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CLARION_HOME") or Path.home() / ".clarion")


def default_database_url(env: Mapping[str, str]) -> str:
    return f"sqlite:///{clarion_home(env) / 'clarion.db'}"


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8787
    database_url: str = ""
    bus_url: str = "memory"
    config_file: str | None = None
    auth: bool = False
    insecure_no_auth: bool = False
    timeouts: Timeouts = field(default_factory=Timeouts)
    agents: Mapping[str, AgentProfile] = field(default_factory=dict)
    failpoints: str = ""
    webhooks: tuple[Webhook, ...] = ()
    delivery_policy: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    # The web UI's address as people reach it (webhook links); default: the server's own.
    public_url: str | None = None
    # Answer links (docs/notifications.md): how long one stays valid, and an optional key.
    answer_links: AnswerLinkSettings = field(default_factory=AnswerLinkSettings)
    # `[notifications.email]` and each workspace's (docs/notifications.md).
    email: EmailSettings = field(default_factory=EmailSettings)
    # `[notifications.slack]`, each workspace's, and `[slack.users]` (docs/notifications.md).
    slack: SlackSettings = field(default_factory=SlackSettings)
    # Cluster mode (docs/cluster.md): replicas on one PostgreSQL database and one NATS.
    cluster: bool = False
    advertise_url: str | None = None
    replica_timeout: float = 10.0
    # `[cluster] redirect_to_owner`: a 307 to the session's owner instead of the carry.
    redirect_to_owner: bool = False
    # `[workspaces.NAME.waiting]`: the policy of questions asked in that workspace.
    workspace_waiting: Mapping[str, WaitingPolicy] = field(default_factory=dict)
    # `[workspaces.NAME.roles]`: role name -> users, which `escalate_to` may name.
    workspace_roles: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    # Metrics token, retention, telemetry (docs/operations.md).
    operations: OperationsConfig = field(default_factory=OperationsConfig)
    # `[telemetry]`: where traces go (None: nowhere, and OpenTelemetry is never loaded).
    telemetry: TelemetrySettings | None = None
    # `[repositories.NAME]`, workspace defaults, `worktrees_dir`, `max_patch_bytes`
    # (docs/workspaces.md).
    repositories: RepositorySettings = field(default_factory=RepositorySettings)

    @classmethod
    def load(
        cls,
        *,
        host: str | None = None,
        port: int | None = None,
        database_url: str | None = None,
        bus_url: str | None = None,
        config_file: str | None = None,
        auth: bool | None = None,
        insecure_no_auth: bool = False,
        cluster: bool | None = None,
        advertise_url: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Settings:
        """Flags win over env vars, which win over defaults. Raises ValueError on bad values."""
        env = os.environ if env is None else env
        config_file = config_file or env.get("CLARION_CONFIG") or None
        # The one parse of the file: every part below is built from it.
        document = read_document(config_file, env)
        where = str(Path(config_file)) if config_file else None
        if port is not None:
            port_value = _port(port, "--port")
        else:
            port_value = _port(env.get("CLARION_PORT") or "8787", "CLARION_PORT")
        auth_env = flag(env.get("CLARION_AUTH", ""), "CLARION_AUTH")
        database_url = database_url or env.get("CLARION_DATABASE_URL") or default_database_url(env)
        home = clarion_home(env)
        hidden = hidden_paths(home, database_url, config_file, document.worktrees_dir)
        settings = cls(
            host=host or env.get("CLARION_HOST") or "127.0.0.1",
            port=port_value,
            database_url=database_url,
            bus_url=bus_url or env.get("CLARION_BUS_URL") or "memory",
            config_file=config_file,
            auth=auth if auth is not None else auth_env,
            insecure_no_auth=insecure_no_auth,
            timeouts=Timeouts.from_env(env),
            agents=agent_profiles(document, home=home, hidden=hidden),
            failpoints=env.get("CLARION_FAILPOINTS", ""),
            webhooks=tuple(hook.webhook() for hook in document.webhooks),
            delivery_policy=DeliveryPolicy.from_env(env),
            public_url=checked_public_url(env.get("CLARION_PUBLIC_URL") or document.public_url),
            answer_links=answer_links(document, env),
            email=email_settings(document, where, env),
            slack=slack_settings(document, where, env),
            cluster=cluster
            if cluster is not None
            else flag(env.get("CLARION_CLUSTER", ""), "CLARION_CLUSTER"),
            advertise_url=_advertise_url(advertise_url or env.get("CLARION_ADVERTISE_URL")),
            replica_timeout=positive(env, "CLARION_REPLICA_TIMEOUT_S", 10.0),
            redirect_to_owner=redirect_to_owner(document, env),
            workspace_waiting={
                name: ws.waiting.policy()
                for name, ws in document.workspaces.items()
                if ws.waiting is not None
            },
            workspace_roles=document.roles(),
            operations=OperationsConfig.load(document, env),
            telemetry=None if document.telemetry is None else document.telemetry.settings(),
            repositories=repository_settings(document, config_file, home),
        )
        if settings.cluster:
            _check_cluster(settings)
        return settings


def _port(raw: int | str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer port, got {raw!r}") from exc
    if not 0 <= value <= 65535:
        raise ValueError(f"{name} must be a port between 0 and 65535, got {raw!r}")
    return value


def _advertise_url(value: str | None) -> str | None:
    return None if not value else http_url(value, "CLARION_ADVERTISE_URL").rstrip("/")


def _check_cluster(settings: Settings) -> None:
    """Cluster mode shares one PostgreSQL database and one NATS between replicas."""
    scheme = settings.database_url.split(":", 1)[0]
    if scheme.split("+", 1)[0] not in ("postgresql", "postgres"):
        raise ValueError(
            f"cluster mode needs PostgreSQL: pass --database postgresql://... (got {scheme})"
        )
    if not settings.bus_url.startswith("nats://"):
        raise ValueError(f"cluster mode needs NATS: pass --bus nats://... (got {settings.bus_url})")
