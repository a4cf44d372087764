"""Reading configuration values: the TOML file, positive durations from env vars, durations
in the config file (`30s`, `10m`, `8h`, `2d`), http(s) URLs. Shared by `clarion.config` and
`clarion.webhook_config`; imports nothing internal."""

from __future__ import annotations

import math
import re
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


_DURATION = re.compile(r"([0-9]+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: Any, where: str) -> float:
    """A config-file duration in seconds: an integer plus `s`, `m`, `h` or `d`, or `0` (which
    callers read as "never"). Anything else is refused in one line naming `where`."""
    if (value == 0 and not isinstance(value, bool)) or value == "0":
        return 0.0
    match = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"{where} must be a duration such as 30s, 10m, 8h or 2d (or 0), got {value!r}"
        )
    return float(int(match.group(1)) * _UNIT_SECONDS[match.group(2)])


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
