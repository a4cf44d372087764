"""`[cluster]` in the TOML file: how a replica answers a request for another replica's
session (docs/cluster.md). Imports only the configuration readers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from clarion.config.files import read_config, table

_KEYS = frozenset({"redirect_to_owner"})
_ENV = "CLARION_REDIRECT_TO_OWNER"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def load_redirect_to_owner(config_file: str | None, env: Mapping[str, str]) -> bool:
    """`[cluster] redirect_to_owner = true` (env CLARION_REDIRECT_TO_OWNER wins): answer such a
    request with a 307 to the owner's advertise URL instead of carrying it. Off by default:
    a client that does not follow a redirect, or follows it without its credentials, is
    served only by the carry."""
    raw = env.get(_ENV)
    if raw is not None and raw.strip() != "":
        value = raw.strip().lower()
        if value not in _TRUE | _FALSE:
            raise ValueError(
                f"{_ENV} must be one of 1, true, yes, on, 0, false, no, off; got {raw!r}"
            )
        return value in _TRUE
    if not config_file:
        return False
    data = read_config(Path(config_file))
    if "cluster" not in data:
        return False
    spec = table(data["cluster"], f"{config_file}: [cluster]")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(f"{config_file}: [cluster]: unknown key(s) {', '.join(unknown)}")
    value = spec.get("redirect_to_owner", False)
    if not isinstance(value, bool):
        raise ValueError(
            f"{config_file}: cluster.redirect_to_owner must be true or false, got {value!r}"
        )
    return value
