"""Agent profiles: the built-in agent, and one per `[agents.NAME]` of the config file, built
from the one parse of the file (`clarion.config.document`), whose models check each key."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clarion.config.defaults import BUILTIN_PROFILE, DEFAULT_IDLE_STOP_AFTER
from clarion.config.load import read_document
from clarion.config.sandbox import HiddenPaths, SandboxConfig, agent_home
from clarion.domain.waiting import WaitingPolicy

if TYPE_CHECKING:
    from clarion.config.document import ConfigDocument

BUILTIN_COMMAND = (sys.executable, "-m", "clarion.agents.builtin")
__all__ = [
    "BUILTIN_PROFILE",
    "AgentProfile",
    "agent_profiles",
    "builtin_profile",
    "load_agent_profiles",
]


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


def agent_profiles(
    document: ConfigDocument, *, home: Path | None = None, hidden: HiddenPaths | None = None
) -> dict[str, AgentProfile]:
    """`builtin` and every `[agents.NAME]`. `home` is Clarion's (the agents' homes are in it);
    `hidden`, what their sandboxes hide."""
    hidden = hidden or HiddenPaths()
    builtin = builtin_profile(home, hidden)
    profiles: dict[str, AgentProfile] = {BUILTIN_PROFILE: builtin}
    for name, spec in document.agents.items():
        env = dict(spec.env)
        if name == BUILTIN_PROFILE and spec.command is None:
            # `[agents.builtin]` may set options of the built-in agent without replacing it.
            env = {**builtin.env, **env}
        # A HOME the profile's env sets is the agent's home, sandboxed or not (`home` wins).
        own_home = env.get("HOME") if name != BUILTIN_PROFILE or "HOME" in spec.env else None
        sandbox = spec.sandbox_config(
            default_home=own_home or agent_home(home or Path.home() / ".clarion", name),
            hidden=hidden,
        )
        if name == BUILTIN_PROFILE and "HOME" not in spec.env and sandbox.home:
            # The built-in agent lives in its own home, sandboxed or not (see builtin_profile).
            env = {**env, "HOME": sandbox.home}
        profiles[name] = AgentProfile(
            name=name,
            command=spec.command or builtin.command,
            env=env,
            cwd=spec.cwd,
            permissions_allow=spec.permissions.allow,
            permissions_reject=spec.permissions.reject,
            start_timeout=spec.start_timeout_s,
            idle_stop_after=spec.agent_idle_stop_after,
            waiting=None if spec.waiting is None else spec.waiting.policy(),
            sandbox=sandbox,
        )
    return profiles


def load_agent_profiles(
    config_file: str | None, *, home: Path | None = None, hidden: HiddenPaths | None = None
) -> dict[str, AgentProfile]:
    """The profiles of the file at `config_file` (`builtin` only without one)."""
    return agent_profiles(read_document(config_file, os.environ), home=home, hidden=hidden)
