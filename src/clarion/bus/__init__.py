"""Bus implementations (ports.Bus) and `open_bus`, which picks one from the `--bus` URL.

Imported by the composition root (wiring) and tests; services see only ports.Bus.
"""

from __future__ import annotations

from clarion.bus.codec import decode_event, encode_event
from clarion.bus.fanout import BusClosed, Subscription
from clarion.bus.memory import MemoryBus
from clarion.bus.nats import DEFAULT_SUBJECT_PREFIX, NatsBus, NatsUnavailable

__all__ = [
    "BusClosed",
    "MemoryBus",
    "NatsBus",
    "NatsUnavailable",
    "Subscription",
    "decode_event",
    "encode_event",
    "open_bus",
]


def open_bus(url: str, *, subject_prefix: str = DEFAULT_SUBJECT_PREFIX) -> MemoryBus | NatsBus:
    """The bus for `url`, to be entered with `async with`: `memory` or `nats://host:port`.

    Raises ValueError at once for any other URL, before anything connects.
    """
    if url == "memory":
        return MemoryBus()
    if url.startswith("nats://") and len(url) > len("nats://"):
        return NatsBus(url, subject_prefix=subject_prefix)
    raise ValueError(f"unsupported bus URL {url!r}: use 'memory' or 'nats://host:port'")
