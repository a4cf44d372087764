"""Reading configuration values: the TOML file, positive durations from env vars, http(s)
URLs. Shared by every reader in `clarion.config`; imports nothing internal."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

C = TypeVar("C")


def positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from exc
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {raw!r}")
    return value


def read_config(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ValueError(f"config file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from exc


def http_url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be an http:// or https:// URL")
    parsed = urlsplit(value)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{where} must be an http:// or https:// URL, got {value!r}")
    return value


def redacted(url: str) -> str:
    """`url` with any password replaced, fit for a log line or a message on the terminal."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def table(value: Any, where: str) -> dict[str, Any]:
    """`value` as a TOML table, or a ValueError naming `where`."""
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a table")
    return value


def notification_channels(
    data: Mapping[str, Any],
    path: Path,
    kind: str,
    build: Callable[[str, Mapping[str, Any], str], C],
) -> tuple[C | None, dict[str, C]]:
    """`[notifications.KIND]` and each `[workspaces.NAME.notifications.KIND]` merged over it,
    each built by `build(key, table, where)`; the keys are `KIND:default` and
    `KIND:workspace:NAME`, the outbox's channel names."""
    notifications = table(data.get("notifications", {}), f"{path}: [notifications]")
    base = notifications.get(kind)
    where = f"{path}: notifications.{kind}"
    default = None if base is None else build(f"{kind}:default", table(base, where), where)
    workspaces: dict[str, C] = {}
    for name, spec in table(data.get("workspaces", {}), f"{path}: [workspaces]").items():
        own = table(table(spec, f"{path}: workspaces.{name}").get("notifications", {}), name)
        if kind not in own:
            continue
        ws_where = f"{path}: workspaces.{name}.notifications.{kind}"
        merged = {**(base or {}), **table(own[kind], ws_where)}
        workspaces[name] = build(f"{kind}:workspace:{name}", merged, ws_where)
    return default, workspaces
