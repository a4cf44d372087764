"""`[cluster]` of the file and CLARION_REDIRECT_TO_OWNER: how a replica answers a request for
another replica's session (docs/cluster.md). Imports only the configuration models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models load with the file, not with the settings' types
    from clarion.config.document import ConfigDocument

_ENV = "CLARION_REDIRECT_TO_OWNER"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def redirect_to_owner(document: ConfigDocument, env: Mapping[str, str]) -> bool:
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
    return document.cluster is not None and document.cluster.redirect_to_owner
