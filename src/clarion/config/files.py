"""Reading configuration values: the TOML file, positive durations, on/off flags and http(s)
URLs from env vars. Shared by the modules of `clarion.config`; imports nothing internal."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit


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


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def flag(raw: str, name: str) -> bool:
    """An on/off environment variable; empty is off."""
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name} must be one of 1, true, yes, on, 0, false, no, off; got {raw!r}")


def read_config(path: Path) -> dict[str, Any]:
    """The file parsed as TOML: called once per load, by `clarion.config.document`."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ValueError(f"config file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from exc


def http_url(value: str, where: str) -> str:
    """An http(s) URL from an environment variable or a flag (the file's are checked by its
    models)."""
    if not value.strip():
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
