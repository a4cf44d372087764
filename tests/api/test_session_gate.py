"""The gate that holds back requests for sessions a replica is still adopting
(api/session_gate.py): while an adoption transaction runs every session waits; afterwards
only the adopted ones, until their recovery ends."""

from __future__ import annotations

import asyncio
import contextlib

from clarion.api.session_gate import SessionGate

CEILING_S = 30  # a hang guard, far above what any of these takes


async def _blocked(task: asyncio.Future[None]) -> bool:
    """True if `task` is still waiting once every other ready task has run: nothing here does
    I/O, so a task that can go on does within a few turns of the loop."""
    for _ in range(20):
        await asyncio.sleep(0)
    return not task.done()


async def test_a_session_nobody_is_adopting_is_never_held() -> None:
    gate = SessionGate()
    assert not gate.is_held("s1")
    await asyncio.wait_for(gate.wait("s1"), CEILING_S)


async def test_while_an_adoption_runs_every_session_waits_until_it_ends() -> None:
    gate = SessionGate()
    async with gate.adopting():
        mine = asyncio.ensure_future(gate.wait("mine"))  # a session this replica had before
        other = asyncio.ensure_future(gate.wait("other"))
        assert await _blocked(mine) and await _blocked(other)
        assert gate.is_held("anything")
    async with asyncio.timeout(CEILING_S):  # awaited here, so its outcome is always read
        await asyncio.gather(mine, other)
    assert not gate.is_held("mine")


async def test_after_an_adoption_only_the_adopted_sessions_wait_until_recovered() -> None:
    gate = SessionGate()
    async with gate.adopting():
        adopted = asyncio.ensure_future(gate.wait("s1"))
        kept = asyncio.ensure_future(gate.wait("s9"))
        await gate.recovering(["s1", "s2"])
    await asyncio.wait_for(kept, CEILING_S)  # not adopted: released with the adoption
    assert await _blocked(adopted)
    assert gate.is_held("s1") and gate.is_held("s2") and not gate.is_held("s9")
    late = asyncio.ensure_future(gate.wait("s2"))  # arrives after the adoption
    assert await _blocked(late)
    await gate.recovered(["s1"])
    await asyncio.wait_for(adopted, CEILING_S)
    assert await _blocked(late)  # its own recovery has not ended
    await gate.recovered(["s2"])
    await asyncio.wait_for(late, CEILING_S)


async def test_two_adoptions_at_once_hold_every_session_until_both_end() -> None:
    gate = SessionGate()
    first, second = gate.adopting(), gate.adopting()
    await first.__aenter__()
    await second.__aenter__()
    waiting = asyncio.ensure_future(gate.wait("s1"))
    await first.__aexit__(None, None, None)
    assert await _blocked(waiting)
    await second.__aexit__(None, None, None)
    await asyncio.wait_for(waiting, CEILING_S)


async def test_an_adoption_that_fails_still_releases_the_sessions_it_held() -> None:
    gate = SessionGate()
    waiting: asyncio.Future[None] | None = None
    with contextlib.suppress(OSError):
        async with gate.adopting():
            waiting = asyncio.ensure_future(gate.wait("s1"))
            assert await _blocked(waiting)
            raise OSError("the adoption transaction failed")
    assert waiting is not None
    await asyncio.wait_for(waiting, CEILING_S)
