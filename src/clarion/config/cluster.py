"""`[cluster]` of the file and CLARION_REDIRECT_TO_OWNER: how a replica answers a request for
another replica's session (docs/cluster.md). Imports only the configuration readers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from clarion.config.files import flag

if TYPE_CHECKING:  # the models load with the file, not with the settings' types
    from clarion.config.document import ConfigDocument

_ENV = "CLARION_REDIRECT_TO_OWNER"


def redirect_to_owner(document: ConfigDocument, env: Mapping[str, str]) -> bool:
    """`[cluster] redirect_to_owner = true` (env CLARION_REDIRECT_TO_OWNER wins): answer such a
    request with a 307 to the owner's advertise URL instead of carrying it. Off by default:
    a client that does not follow a redirect, or follows it without its credentials, is
    served only by the carry."""
    raw = env.get(_ENV, "")
    if raw.strip():
        return flag(raw, _ENV)
    return document.cluster is not None and document.cluster.redirect_to_owner
