"""Answer links: a signed token naming one question bundle until it expires. Pure.

A token is `<payload>.<mac>`, both unpadded base64url: the payload is `<pending_id>.<expiry as
Unix seconds>`, the MAC an HMAC-SHA256 of the payload's bytes with the server's secret. The
token carries everything needed to check it, so a replica that never issued it verifies it with
the shared secret alone. Whether the bundle may still be answered is the bundle's state, read
afterwards: the token only says which bundle, and until when.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from datetime import datetime

# Ids are printable and never contain the separator; anything else in a payload is a forgery.
_PENDING_ID = re.compile(r"[A-Za-z0-9_\-]{1,128}")
_MAX_TOKEN = 512
PATH_PREFIX = "/a/"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()


def sign(secret: bytes, pending_id: str, expires_at: datetime) -> str:
    """A token naming `pending_id`, valid until `expires_at` (whole seconds)."""
    if not _PENDING_ID.fullmatch(pending_id):
        raise ValueError(f"not a pending id: {pending_id!r}")
    payload = f"{pending_id}.{int(expires_at.timestamp())}".encode("ascii")
    return f"{_b64(payload)}.{_b64(_mac(secret, payload))}"


def verify(secret: bytes, token: str, now: datetime) -> str | None:
    """The pending id a genuine, unexpired token names; None for anything else (forged,
    altered, truncated, expired, garbage), without saying which."""
    if len(token) > _MAX_TOKEN or token.count(".") != 1:
        return None
    encoded_payload, encoded_mac = token.split(".")
    try:
        payload = _unb64(encoded_payload)
        mac = _unb64(encoded_mac)
    except (binascii.Error, ValueError):
        return None
    # Only the canonical encoding is accepted: one token per (pending id, expiry).
    if _b64(payload) != encoded_payload or _b64(mac) != encoded_mac:
        return None
    if not hmac.compare_digest(mac, _mac(secret, payload)):
        return None
    pending_id, _, expiry = payload.decode("ascii", errors="replace").rpartition(".")
    if not _PENDING_ID.fullmatch(pending_id) or not expiry.isdigit():
        return None
    if int(expiry) <= now.timestamp():
        return None
    return pending_id


def answer_url(base_url: str, token: str) -> str:
    """The page that answers the bundle the token names."""
    return f"{base_url.rstrip('/')}{PATH_PREFIX}{token}"
