"""A survivor's word that it adopted a dead replica's sessions, over a real NATS server
(bus/adoptions.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from nats.aio.client import Client

from clarion.bus.adoptions import announce_adoption, hear_adoptions

pytestmark = pytest.mark.nats

CEILING_S = 60


async def test_every_replica_hears_which_replica_another_one_adopted(nats_url: str) -> None:
    hearing, adopter = Client(), Client()
    await hearing.connect(nats_url, max_reconnect_attempts=1)
    await adopter.connect(nats_url, max_reconnect_attempts=1)
    dead = f"dead-{uuid.uuid4().hex}"  # other tests and clusters may announce on this subject
    heard: asyncio.Queue[str] = asyncio.Queue()
    try:
        await hear_adoptions(hearing, heard.put_nowait)
        # The SUB is in place once a second PONG is back (the first may overtake it).
        await hearing.flush()
        await hearing.flush()
        await announce_adoption(adopter, dead)
        async with asyncio.timeout(CEILING_S):
            while (replica := await heard.get()) != dead:
                pass
        assert replica == dead
    finally:
        await hearing.close()
        await adopter.close()
