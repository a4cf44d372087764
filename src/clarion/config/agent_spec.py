"""`[agents.NAME]` as the config file holds it: the command and its environment, the
permission policy, timeouts, the waiting policy and the sandbox keys. Keys it does not know
are left alone (other parts of Clarion have read them). Imports only the configuration models
and the pure domain's duration parser."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, field_validator

from clarion.config.defaults import DEFAULT_IDLE_STOP_AFTER
from clarion.config.permissions import PermissionsSpec
from clarion.config.sandbox import (
    SANDBOX_MODES,
    HiddenPaths,
    SandboxConfig,
    SandboxMode,
    real_path,
)
from clarion.config.spec import AbsolutePath, PositiveInteger, PositiveNumber, Spec
from clarion.config.waiting import WaitingSpec
from clarion.domain.waiting import parse_duration

_NEVER = re.compile(r"0[smhd]?")


def _command(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(c, str) and c for c in value):
        raise ValueError("must be a non-empty list of strings")
    return tuple(value)


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("must be a table of strings")
    return value


def _cwd(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def _idle_stop_after(value: Any) -> float:
    """A duration (`30s`, `10m`, `8h`, `2d`), or 0 for never."""
    if (value == 0 and not isinstance(value, bool)) or (
        isinstance(value, str) and _NEVER.fullmatch(value.strip())
    ):
        return 0.0
    return float(parse_duration(value).seconds)


def _absolute_paths(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(
        isinstance(p, str) and os.path.isabs(p) for p in value
    ):
        raise ValueError("must be a list of absolute paths")
    return tuple(value)


_SIZE = re.compile(r"(\d+)\s*([kmgt]?)i?b?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIN_MEMORY = 1 << 20  # less and not even the agent's interpreter starts


def _bytes(value: Any) -> int:
    """An integer of bytes or a size such as `512M`, `2G`, `2GiB`."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (m := _SIZE.fullmatch(value.strip())):
        size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    else:
        raise ValueError(f"must be a size such as 512M or 2G, got {value!r}")
    if size < MIN_MEMORY:
        raise ValueError(f"must be at least 1M, got {value!r}")
    return size


AbsolutePaths = Annotated[tuple[str, ...], BeforeValidator(_absolute_paths)]
Size = Annotated[int, BeforeValidator(_bytes)]


class SandboxKeys(Spec):
    """A profile's sandbox keys, as its table in the file holds them."""

    sandbox: SandboxMode = "auto"
    extra_read: AbsolutePaths = ()
    extra_write: AbsolutePaths = ()
    home: AbsolutePath | None = None
    pids_max: PositiveInteger | None = None
    memory_max: Size | None = None

    @field_validator("sandbox", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if value not in SANDBOX_MODES:
            raise ValueError(f"must be one of auto, bwrap, none; got {value!r}")
        return value

    def sandbox_config(self, *, default_home: str, hidden: HiddenPaths) -> SandboxConfig:
        """The profile's sandbox; its home is `default_home` unless the table sets one."""
        return SandboxConfig(
            mode=self.sandbox,
            extra_read=tuple(real_path(p) for p in self.extra_read),
            extra_write=tuple(real_path(p) for p in self.extra_write),
            home=real_path(self.home or default_home),
            pids_max=self.pids_max,
            memory_max=self.memory_max,
            hidden=hidden,
        )


class AgentSpec(SandboxKeys):
    model_config = ConfigDict(extra="ignore")
    unknown_says = None

    # None only for `[agents.builtin]`, which may set options of the built-in agent without
    # replacing its command (the file's model refuses it anywhere else).
    command: Annotated[tuple[str, ...], BeforeValidator(_command)] | None = None
    env: Annotated[dict[str, str], BeforeValidator(_env)] = Field(default_factory=dict)
    cwd: Annotated[str, BeforeValidator(_cwd)] | None = None
    permissions: PermissionsSpec = PermissionsSpec()
    start_timeout_s: PositiveNumber | None = None
    agent_idle_stop_after: Annotated[float, BeforeValidator(_idle_stop_after)] = (
        DEFAULT_IDLE_STOP_AFTER
    )
    waiting: WaitingSpec | None = None
