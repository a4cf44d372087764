"""Waiting for several things under a ceiling without leaving a future for the garbage collector
to report.

`asyncio.wait_for(asyncio.gather(...), ceiling)` leaves the gather unretrieved when the caller
is cancelled (Python 3.11's `wait_for` cancels it and waits, but never reads its outcome): the
gather then carries a CancelledError nobody read, and when it is collected, perhaps in a later
test of the same process, asyncio logs "_GatheringFuture exception was never retrieved". A
smoke run cancelled at its ceiling did exactly that. Here the caller's own task awaits the
gather, so its outcome is always read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def gather_within(ceiling_s: float, *aws: Awaitable[Any]) -> list[Any]:
    """`asyncio.gather(*aws)` under `ceiling_s` (TimeoutError past it)."""
    async with asyncio.timeout(ceiling_s):
        return list(await asyncio.gather(*aws))
