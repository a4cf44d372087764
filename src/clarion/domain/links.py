"""Signed links: a token naming one question bundle (an answer link) or one permission request
(a decision link) until it expires. Pure.

A token is `<payload>.<mac>`, both unpadded base64url: the payload is `<id>.<expiry as Unix
seconds>`, the MAC an HMAC-SHA256 of the payload's bytes with the purpose's key. The token
carries everything needed to check it, so a replica that never issued it verifies it with the
shared secret alone. Whether the item may still be answered or decided is its state, read
afterwards: the token only says which item, and until when.

Each purpose signs with its own key derived from the one secret (an answer link with the secret
itself, so links issued before decision links existed stay valid): a question's token never
verifies as a permission request's, and the other way round, even where the ids coincide.
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
DECISION_PATH_PREFIX = "/p/"
ANSWER = "answer"  # a question bundle, by pending id
DECISION = "decision"  # a permission request, by its message id


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _key(secret: bytes, purpose: str) -> bytes:
    if purpose == ANSWER:
        return secret
    if purpose != DECISION:
        raise ValueError(f"not a link purpose: {purpose!r}")
    return hmac.new(secret, f"clarion link purpose: {purpose}".encode(), hashlib.sha256).digest()


def _mac(secret: bytes, payload: bytes, purpose: str) -> bytes:
    return hmac.new(_key(secret, purpose), payload, hashlib.sha256).digest()


def sign(secret: bytes, pending_id: str, expires_at: datetime, purpose: str = ANSWER) -> str:
    """A token naming `pending_id` (or a permission request's message id, for a decision
    link), valid until `expires_at` (whole seconds), for `purpose` only."""
    if not _PENDING_ID.fullmatch(pending_id):
        raise ValueError(f"not a pending id: {pending_id!r}")
    payload = f"{pending_id}.{int(expires_at.timestamp())}".encode("ascii")
    return f"{_b64(payload)}.{_b64(_mac(secret, payload, purpose))}"


def verify(secret: bytes, token: str, now: datetime, purpose: str = ANSWER) -> str | None:
    """The id a genuine, unexpired token of `purpose` names; None for anything else (forged,
    altered, truncated, expired, made for the other purpose, garbage), without saying which."""
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
    if not hmac.compare_digest(mac, _mac(secret, payload, purpose)):
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


def decision_url(base_url: str, token: str) -> str:
    """The page that decides the permission request the token names."""
    return f"{base_url.rstrip('/')}{DECISION_PATH_PREFIX}{token}"
