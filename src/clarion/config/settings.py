"""Settings, read once from flags, env vars and the TOML config file. Imports only the
configuration readers beside it (`files`, `webhooks`, `email`, ...), which import only the pure
domain."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clarion.config.cluster import load_redirect_to_owner
from clarion.config.email import EmailSettings, load_email
from clarion.config.files import http_url, positive, read_config
from clarion.config.links import AnswerLinkSettings, load_answer_links
from clarion.config.ops import OperationsConfig
from clarion.config.permissions import permission_rules
from clarion.config.repositories import RepositorySettings, load_repositories
from clarion.config.sandbox import (
    HiddenPaths,
    SandboxConfig,
    agent_home,
    hidden_paths,
    load_sandbox,
)
from clarion.config.slack import SlackSettings, load_slack
from clarion.config.telemetry import TelemetrySettings, load_telemetry
from clarion.config.waiting import (
    load_workspace_policies,
    load_workspace_roles,
    role_names,
    waiting_policy,
)
from clarion.config.webhooks import (
    Webhook,
    WebhookDelivery,
    checked_public_url,
    load_public_url,
    load_webhooks,
)
from clarion.domain.waiting import WaitingPolicy, parse_duration

DEFAULT_IDLE_STOP_AFTER = 600.0


@dataclass(frozen=True, slots=True)
class AgentProfile:
    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    # `[agents.NAME.permissions]`: ACP tool kinds allowed or rejected without asking.
    permissions_allow: frozenset[str] = frozenset()
    permissions_reject: frozenset[str] = frozenset()
    # How long the agent may take to start and open its ACP session (None: the default).
    start_timeout: float | None = None
    # `agent_idle_stop_after`: seconds a session may sit idle before its agent process is
    # stopped (it starts again on the next prompt); 0 never stops it.
    idle_stop_after: float = DEFAULT_IDLE_STOP_AFTER
    # `[agents.NAME.waiting]`: reminders, escalation and expiry of its questions.
    waiting: WaitingPolicy | None = None
    # `sandbox`, `extra_read`, `extra_write`, `home`, `pids_max`, `memory_max`.
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


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


BUILTIN_PROFILE = "builtin"


def builtin_profile(home: Path | None = None, hidden: HiddenPaths | None = None) -> AgentProfile:
    """The built-in agent. With Clarion's `home`, its own home is `agent-homes/builtin` there,
    sandboxed or not: it keeps its sessions' small state in it (so it can load a session after
    a restart); without, in its `~/.clarion-builtin`."""
    if home is None:
        return AgentProfile(name=BUILTIN_PROFILE, command=BUILTIN_COMMAND)
    own = agent_home(home, BUILTIN_PROFILE)
    return AgentProfile(
        name=BUILTIN_PROFILE,
        command=BUILTIN_COMMAND,
        env={"HOME": own},
        sandbox=SandboxConfig(home=own, hidden=hidden or HiddenPaths()),
    )


BUILTIN_COMMAND = (sys.executable, "-m", "clarion.agents.builtin")


# Outgoing webhook events (the contract's names; clarion.domain.webhooks keeps the same list).
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
    webhook_delivery: WebhookDelivery = field(default_factory=WebhookDelivery)
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
        if port is not None:
            port_value = _port(port, "--port")
        else:
            port_value = _port(env.get("CLARION_PORT") or "8787", "CLARION_PORT")
        auth_env = _flag(env.get("CLARION_AUTH", ""), "CLARION_AUTH")
        database_url = database_url or env.get("CLARION_DATABASE_URL") or default_database_url(env)
        home = clarion_home(env)
        hidden = hidden_paths(home, database_url, config_file, _worktrees_dir(config_file))
        settings = cls(
            host=host or env.get("CLARION_HOST") or "127.0.0.1",
            port=port_value,
            database_url=database_url,
            bus_url=bus_url or env.get("CLARION_BUS_URL") or "memory",
            config_file=config_file,
            auth=auth if auth is not None else auth_env,
            insecure_no_auth=insecure_no_auth,
            timeouts=Timeouts.from_env(env),
            agents=load_agent_profiles(config_file, home=home, hidden=hidden),
            failpoints=env.get("CLARION_FAILPOINTS", ""),
            webhooks=load_webhooks(config_file),
            webhook_delivery=WebhookDelivery.from_env(env),
            public_url=checked_public_url(
                env.get("CLARION_PUBLIC_URL") or load_public_url(config_file)
            ),
            answer_links=load_answer_links(config_file, env),
            email=load_email(config_file, env),
            slack=load_slack(config_file, env),
            cluster=cluster
            if cluster is not None
            else _flag(env.get("CLARION_CLUSTER", ""), "CLARION_CLUSTER"),
            advertise_url=_advertise_url(advertise_url or env.get("CLARION_ADVERTISE_URL")),
            replica_timeout=positive(env, "CLARION_REPLICA_TIMEOUT_S", 10.0),
            redirect_to_owner=load_redirect_to_owner(config_file, env),
            workspace_waiting=load_workspace_policies(config_file),
            workspace_roles=load_workspace_roles(config_file),
            operations=OperationsConfig.load(config_file, env),
            telemetry=load_telemetry(config_file),
            repositories=load_repositories(config_file, clarion_home(env)),
        )
        if settings.cluster:
            _check_cluster(settings)
        return settings


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def _flag(raw: str, name: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name} must be one of 1, true, yes, on, 0, false, no, off; got {raw!r}")


def _port(raw: int | str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer port, got {raw!r}") from exc
    if not 0 <= value <= 65535:
        raise ValueError(f"{name} must be a port between 0 and 65535, got {raw!r}")
    return value


def load_agent_profiles(
    config_file: str | None, *, home: Path | None = None, hidden: HiddenPaths | None = None
) -> dict[str, AgentProfile]:
    """`[agents.NAME] command = [...]`, optional `env`, `cwd` and the rest; `builtin` always
    exists. `home` is Clarion's (the agents' homes are in it); `hidden`, what their sandboxes
    hide."""
    hidden = hidden or HiddenPaths()
    profiles: dict[str, AgentProfile] = {BUILTIN_PROFILE: builtin_profile(home, hidden)}
    if not config_file:
        return profiles
    path = Path(config_file)
    data = read_config(path)
    agents = data.get("agents", {})
    roles = role_names(load_workspace_roles(config_file))
    if not isinstance(agents, dict):
        raise ValueError(f"{path}: [agents] must be a table")
    for name, spec in agents.items():
        if not isinstance(spec, dict):
            raise ValueError(f"{path}: [agents.{name}] must be a table")
        own_env = spec.get("env", {})
        if name == BUILTIN_PROFILE and "command" not in spec:
            # `[agents.builtin]` may set options of the built-in agent without replacing it.
            builtin = profiles[name]
            env = spec.get("env", {})
            if isinstance(env, dict):
                env = {**builtin.env, **env}
            spec = {**spec, "command": list(builtin.command), "env": env}
        command = spec.get("command")
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(c, str) and c for c in command)
        ):
            raise ValueError(f"{path}: agents.{name}.command must be a non-empty list of strings")
        env = spec.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError(f"{path}: agents.{name}.env must be a table of strings")
        cwd = spec.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError(f"{path}: agents.{name}.cwd must be a string")
        allow, reject = permission_rules(spec.get("permissions", {}), f"{path}: agents.{name}")
        start_timeout = spec.get("start_timeout_s")
        if start_timeout is not None and (
            isinstance(start_timeout, bool)
            or not isinstance(start_timeout, int | float)
            or not math.isfinite(start_timeout)
            or start_timeout <= 0
        ):
            raise ValueError(f"{path}: agents.{name}.start_timeout_s must be a positive number")
        # A HOME the profile's env sets is the agent's home, sandboxed or not (`home` wins).
        own_home = env.get("HOME") if name != BUILTIN_PROFILE or "HOME" in own_env else None
        sandbox = load_sandbox(
            spec,
            f"{path}: agents.{name}",
            default_home=own_home or agent_home(home or Path.home() / ".clarion", name),
            hidden=hidden,
        )
        if name == BUILTIN_PROFILE and "HOME" not in own_env and sandbox.home:
            # The built-in agent lives in its own home, sandboxed or not (see builtin_profile).
            env = {**env, "HOME": sandbox.home}
        profiles[name] = AgentProfile(
            name=name,
            command=tuple(command),
            env=env,
            cwd=cwd,
            permissions_allow=allow,
            permissions_reject=reject,
            start_timeout=None if start_timeout is None else float(start_timeout),
            idle_stop_after=_idle_stop_after(spec, f"{path}: agents.{name}"),
            waiting=waiting_policy(spec.get("waiting"), path, f"agents.{name}.waiting", roles),
            sandbox=sandbox,
        )
    return profiles


def _worktrees_dir(config_file: str | None) -> str | None:
    """The task worktrees' folder, when the config file moves it (`worktrees_dir`)."""
    if not config_file:
        return None
    value = read_config(Path(config_file)).get("worktrees_dir")
    if value is not None and (not isinstance(value, str) or not os.path.isabs(value)):
        raise ValueError(f"{config_file}: worktrees_dir must be an absolute path")
    return value


def _idle_stop_after(spec: Mapping[str, Any], where: str) -> float:
    """`agent_idle_stop_after`: a duration (`30s`, `10m`, `8h`, `2d`), or 0 for never."""
    value = spec.get("agent_idle_stop_after")
    if value is None:
        return DEFAULT_IDLE_STOP_AFTER
    if (value == 0 and not isinstance(value, bool)) or (
        isinstance(value, str) and _NEVER.fullmatch(value.strip())
    ):
        return 0.0
    try:
        return float(parse_duration(value).seconds)
    except ValueError as exc:
        raise ValueError(f"{where}.agent_idle_stop_after {exc}") from None


_NEVER = re.compile(r"0[smhd]?")


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
