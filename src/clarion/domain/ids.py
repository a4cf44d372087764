"""Identifiers: time-ordered so that ties in timestamps still sort in creation order."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_id() -> str:
    """A 32-hex-digit id (UUIDv7 layout): 48-bit milliseconds, a 12-bit counter, random tail.

    Ids made in one process sort in the order they were made, even within one millisecond,
    which keeps transcript order stable when two rows share a timestamp.
    """
    global _last_ms, _counter
    with _lock:
        now = time.time_ns() // 1_000_000
        if now <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
            now = _last_ms
        else:
            _last_ms = now
            _counter = 0
        counter = _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (now << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
