"""`[agents.NAME]` as the config file holds it: the command and its environment, the
permission policy, timeouts, the waiting policy and the sandbox keys. Keys it does not know
are left alone (other parts of Clarion have read them). Imports only the configuration models
and the pure domain's duration parser."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field

from clarion.config.permissions import PermissionsSpec
from clarion.config.sandbox import SandboxKeys
from clarion.config.spec import PositiveNumber
from clarion.config.waiting import WaitingSpec
from clarion.domain.waiting import parse_duration

DEFAULT_IDLE_STOP_AFTER = 600.0
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
