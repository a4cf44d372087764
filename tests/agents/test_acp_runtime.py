"""AcpRuntime driving the real built-in agent subprocess."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from clarion.agents.runtime import AcpRuntime
from clarion.config import AgentProfile
from clarion.config.sandbox import SandboxConfig
from clarion.domain.errors import AgentBusy, AgentFailure, NotFound
from clarion.ports import AgentOutput, PromptFinished
from tests.agents.agent_harness import WAIT_S, RecordingSink, launch

pytestmark = pytest.mark.timeout(180)


async def test_plain_prompt_gets_received_reply_and_end_turn(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    assert await runtime.ensure_started(launch()) is True
    await runtime.prompt("s1", "hello there", generation=1)
    finished = await sink.finished(1)
    assert finished == PromptFinished("s1", 1, "end_turn")
    assert sink.messages(1) == ["Received: hello there"]
    # Already running: not started again.
    assert await runtime.ensure_started(launch()) is False
    assert runtime.is_running("s1")


async def test_echo_scenario_replies_with_the_rest_of_the_prompt(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario echo hi there", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert sink.messages(1) == ["echo: hi there"]


async def test_stream_arrives_in_order(runtime: AcpRuntime, sink: RecordingSink) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=50 ms=0", generation=1)
    await sink.finished(1)
    assert sink.messages(1) == [f"chunk {i}\n" for i in range(1, 51)]
    # The turn's end is delivered after every one of its outputs.
    assert isinstance(sink.items[-1], PromptFinished)


async def test_stderr_flood_does_not_hang_the_prompt(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stderr-flood bytes=2097152", generation=1)
    finished = await sink.finished(1)
    assert finished.stop_reason == "end_turn"
    assert sink.messages(1) == ["flooded"]


async def test_cancel_during_stream_finishes_cancelled_with_ack_before_the_end(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=1000 ms=20", generation=7)
    await sink.wait_for(lambda: len(sink.messages(7)) >= 2)
    await runtime.cancel("s1")
    finished = await sink.finished(7)
    assert finished.stop_reason == "cancelled"
    assert len(sink.messages(7)) < 1000
    acks = [o for o in sink.outputs if o.kind == "cancel_ack"]
    assert acks == [AgentOutput("s1", 7, "cancel_ack")]
    assert sink.items.index(acks[0]) == len(sink.items) - 2
    assert sink.items[-1] is finished
    # The session stays usable after a cancelled turn.
    await runtime.prompt("s1", "again", generation=8)
    assert (await sink.finished(8)).stop_reason == "end_turn"


async def test_prompt_without_a_running_agent_raises(runtime: AcpRuntime) -> None:
    with pytest.raises(AgentFailure):
        await runtime.prompt("nobody", "hi", generation=1)


async def test_second_prompt_while_one_runs_is_refused(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=1000 ms=20", generation=1)
    with pytest.raises(AgentBusy):
        await runtime.prompt("s1", "hi", generation=2)
    await runtime.cancel("s1")
    assert (await sink.finished(1)).stop_reason == "cancelled"


async def test_stop_ends_the_process_and_later_prompts_raise(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    agent = runtime._agents["s1"]
    await runtime.stop("s1")
    assert agent.proc.returncode is not None
    assert not runtime.is_running("s1")
    with pytest.raises(AgentFailure):
        await runtime.prompt("s1", "hi", generation=1)


async def test_stop_during_a_prompt_reports_error_finish(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=1000 ms=20", generation=3)
    await sink.wait_for(lambda: len(sink.messages(3)) >= 1)
    await runtime.stop("s1")
    finished = await sink.finished(3)
    assert finished.stop_reason == "error"
    assert finished.error


async def test_outputs_carry_the_generation_of_their_prompt(
    runtime: AcpRuntime, sink: RecordingSink
) -> None:
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=3 ms=0", generation=4)
    await sink.finished(4)
    await runtime.prompt("s1", "/scenario echo second", generation=5)
    await sink.finished(5)
    tags = [(type(i).__name__, i.generation) for i in sink.items]
    assert tags == [
        ("AgentOutput", 4),
        ("AgentOutput", 4),
        ("AgentOutput", 4),
        ("PromptFinished", 4),
        ("AgentOutput", 5),
        ("PromptFinished", 5),
    ]
    assert sink.messages(5) == ["echo: second"]


async def test_a_failing_sink_is_logged_and_does_not_stop_delivery(
    runtime: AcpRuntime, sink: RecordingSink, caplog: pytest.LogCaptureFixture
) -> None:
    sink.fail_on = lambda item: isinstance(item, AgentOutput)
    await runtime.ensure_started(launch())
    await runtime.prompt("s1", "/scenario stream n=3 ms=0", generation=1)
    assert (await sink.finished(1)).stop_reason == "end_turn"
    assert len(sink.messages(1)) == 3
    failures = [r for r in caplog.records if r.getMessage().startswith("agent sink failed")]
    assert len(failures) == 3
    assert all(getattr(r, "session_id", None) == "s1" for r in failures)


async def test_agent_that_dies_mid_prompt_reports_error(sink: RecordingSink) -> None:
    script = (
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    if msg.get('method') == 'initialize':\n"
        "        r = {'protocolVersion': 1}\n"
        "    elif msg.get('method') == 'session/new':\n"
        "        r = {'sessionId': 'x'}\n"
        "    else:\n"
        "        sys.exit(3)\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': r}), flush=True)\n"
    )
    profile = AgentProfile(name="dying", command=(sys.executable, "-c", script))
    async with AcpRuntime({"dying": profile}, sink, stop_grace=1.0) as rt:
        assert await rt.ensure_started(launch("d1", profile="dying"))
        await rt.prompt("d1", "hi", generation=1)
        finished = await sink.finished(1)
        assert finished.stop_reason == "error"
        async with asyncio.timeout(WAIT_S):
            await rt._agents["d1"].proc.wait()
        assert not rt.is_running("d1")


async def test_unknown_profile_and_unstartable_command_raise(sink: RecordingSink) -> None:
    bad = AgentProfile(name="bad", command=("/nonexistent/agent-binary",))
    async with AcpRuntime({"bad": bad}, sink) as rt:
        with pytest.raises(NotFound):
            await rt.ensure_started(launch("x", profile="nope"))
        with pytest.raises(AgentFailure, match="cannot start"):
            await rt.ensure_started(launch("x", profile="bad"))
        assert not rt.is_running("x")


async def test_agent_that_exits_before_handshake_raises_with_stderr(sink: RecordingSink) -> None:
    script = "import sys; sys.stderr.write('boom: no api key\\n'); sys.exit(2)"
    profile = AgentProfile(name="quitter", command=(sys.executable, "-c", script))
    async with AcpRuntime({"quitter": profile}, sink, start_timeout=10) as rt:
        with pytest.raises(AgentFailure, match="exited with code 2") as failure:
            await rt.ensure_started(launch("q", profile="quitter"))
    assert failure.value.exit_code == 2
    assert "boom: no api key" in failure.value.stderr
    assert sink.exits == []  # a start that failed is not also reported as an exit


async def test_runtime_exit_stops_every_agent(sink: RecordingSink) -> None:
    from clarion.config import builtin_profile

    profile = builtin_profile()
    async with AcpRuntime({profile.name: profile}, sink, stop_grace=1.0) as rt:
        await rt.ensure_started(launch("a"))
        await rt.ensure_started(launch("b"))
        procs = [rt._agents["a"].proc, rt._agents["b"].proc]
    assert all(p.returncode is not None for p in procs)
    await asyncio.sleep(0)


async def test_sink_may_stop_the_agent_from_inside_its_callback(sink: RecordingSink) -> None:
    from clarion.config import builtin_profile

    profile = builtin_profile()
    stopped = asyncio.Event()
    async with AcpRuntime({profile.name: profile}, sink, stop_grace=1.0) as rt:

        async def stop_on_finish(finished: PromptFinished) -> None:
            sink._record(finished)
            await rt.stop(finished.session_id)
            stopped.set()

        sink.on_prompt_finished = stop_on_finish  # type: ignore[method-assign]
        await rt.ensure_started(launch())
        await rt.prompt("s1", "hi", generation=1)
        async with asyncio.timeout(WAIT_S):
            await stopped.wait()
        assert not rt.is_running("s1")


async def test_a_start_cancelled_during_the_handshake_stops_the_agent(
    sink: RecordingSink, tmp_path: Path
) -> None:
    # An agent that reads `initialize`, says so through a file, and never answers.
    asked = tmp_path / "asked"
    script = (
        "import pathlib, sys, time\n"
        "sys.stdin.readline()\n"
        f"pathlib.Path({str(asked)!r}).touch()\n"
        "time.sleep(300)\n"
    )
    # Unsandboxed: it writes to the test's folder and is looked for among this process's
    # children (a sandboxed one is bubblewrap's).
    profile = AgentProfile(
        name="mute", command=(sys.executable, "-c", script), sandbox=SandboxConfig(mode="none")
    )
    async with AcpRuntime({"mute": profile}, sink, stop_grace=0.5) as rt:
        start = asyncio.create_task(rt.ensure_started(launch("m", profile="mute")))
        async with asyncio.timeout(WAIT_S):
            while not asked.exists():  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.05)
        assert len(_children_named("time.sleep(300)")) == 1
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
        assert not rt.is_running("m")
        assert _children_named("time.sleep(300)") == []


def _children_named(fragment: str) -> list[int]:
    """Live (not zombie) processes started by this one whose command line holds `fragment`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline, open(f"/proc/{pid}/stat") as stat:
                command, fields = cmdline.read(), stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fragment.encode() in command and fields[0] != "Z" and int(fields[1]) == os.getpid():
            found.append(int(pid))
    return found
