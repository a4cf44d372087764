"""kandev_meta: the pending-action projection's monotonically allocated epoch.

Used by the port implementations beside it (store-internal).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)
EPOCH_KEY = "pending_action_projection_epoch"


class CorruptEpochError(RuntimeError):
    """A stored epoch is not a positive integer; refusing to guess one."""


def stored_epoch(key: str, raw: object) -> int:
    """A stored epoch's value; CorruptEpochError, never a guess, when it is not a positive
    integer."""
    try:
        epoch = int(str(raw).strip())
    except ValueError:
        epoch = 0
    if epoch < 1:
        raise CorruptEpochError(f"stored {key} is not a positive integer: {raw!r}")
    return epoch
