"""Agent failures made durable: the `error` transcript row, the session's `error` field and,
when the failure ends the session, its move to FAILED, in one commit. Used by the port
implementations beside it (store-internal).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

SESSION_ERROR_KEY = "error"
