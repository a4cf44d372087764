"""The suite's check for subprocesses a test leaves unreaped (tests/process_leaks.py) sees one
and cleans it up so that nothing is reported later against another test."""

from __future__ import annotations

import asyncio
import gc

from tests import process_leaks


def test_a_child_whose_loop_closed_before_it_exited_is_found_and_released() -> None:
    loop = asyncio.new_event_loop()
    proc = loop.run_until_complete(
        asyncio.create_subprocess_exec(
            "sleep", "60", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
    )
    loop.close()  # the child still runs: no loop will ever see it exit
    found = process_leaks.leaked()
    assert [t.get_pid() for t in found] == [proc.pid]
    assert "sleep" in process_leaks.describe(found[0])
    process_leaks.release(found[0])
    assert process_leaks.leaked() == []
    popen = found[0].get_extra_info("subprocess")
    assert popen.returncode is not None  # killed and reaped
    del found, popen, proc
    gc.collect()  # warnings are errors here: a half-released transport would fail the test


def test_a_child_its_loop_saw_exit_is_not_a_leak() -> None:
    async def run() -> int:
        proc = await asyncio.create_subprocess_exec("true", stdout=asyncio.subprocess.PIPE)
        await proc.communicate()
        return proc.pid

    with asyncio.Runner() as runner:
        runner.run(run())
    assert process_leaks.leaked() == []
