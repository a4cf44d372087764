"""Bus implementations (ports.Bus) and `open_bus`, which picks one from the `--bus` URL.

Imported by the composition root (wiring) and tests; services see only ports.Bus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clarion.bus.codec import decode_event, encode_event
from clarion.bus.fanout import BusClosed, Subscription
from clarion.bus.memory import MemoryBus
from clarion.bus.unavailable import NatsUnavailable

if TYPE_CHECKING:
    from clarion.bus.nats import NatsBus

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


def __getattr__(name: str) -> Any:
    # The NATS client is imported when a NATS bus is asked for, not by a server on the
    # in-process bus (about 0.1 CPU-s of every start).
    if name == "NatsBus":
        from clarion.bus.nats import NatsBus

        return NatsBus
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_bus(url: str, *, subject_prefix: str | None = None) -> MemoryBus | NatsBus:
    """The bus for `url`, to be entered with `async with`: `memory` or `nats://host:port`
    (`subject_prefix`: the NATS subjects' prefix, `clarion.events` by default).

    Raises ValueError at once for any other URL, before anything connects.
    """
    if url == "memory":
        return MemoryBus()
    if url.startswith("nats://") and len(url) > len("nats://"):
        from clarion.bus.nats import DEFAULT_SUBJECT_PREFIX, NatsBus

        prefix = DEFAULT_SUBJECT_PREFIX if subject_prefix is None else subject_prefix
        return NatsBus(url, subject_prefix=prefix)
    raise ValueError(f"unsupported bus URL {url!r}: use 'memory' or 'nats://host:port'")
