"""`clarion watch` as a real subprocess: a line per event, the new question among them, Ctrl-C."""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import pytest

from tests.cli.cli_runner import child_env, cli
from tests.e2e.harness import ServerProcess

pytestmark = pytest.mark.e2e


def _lines(stream: IO[str], pumps: list[threading.Thread]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            out.put(line.rstrip("\n"))

    pumps.append(threading.Thread(target=pump, daemon=True))
    pumps[-1].start()
    return out


def _next_matching(lines: queue.Queue[str], needle: str, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            break
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"no line with {needle!r}; saw:\n" + "\n".join(seen))


@contextmanager
def watching(
    server: ServerProcess, *args: str
) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str], queue.Queue[str]]]:
    """`clarion watch ARGS` as a subprocess: (process, stdout lines, stderr lines); killed and
    its pipes drained and closed on exit."""
    proc = subprocess.Popen(
        cli("watch", *args, "--server", server.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    pumps: list[threading.Thread] = []
    try:
        assert proc.stdout is not None and proc.stderr is not None
        yield proc, _lines(proc.stdout, pumps), _lines(proc.stderr, pumps)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        for pump in pumps:  # both pipes are at end of file once the process is gone
            pump.join(timeout=60)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_watch_prints_a_line_for_a_new_question_and_stops_on_ctrl_c(
    shared_server: ServerProcess,
) -> None:
    task_id = shared_server.create_task("Watched")
    with watching(shared_server, "--task", task_id) as (proc, out, err):
        _next_matching(err, "Watching")  # subscribed: nothing published from here is missed
        session_id = shared_server.start_session(task_id, "/scenario ask")
        pending_id = shared_server.wait_for_bundle(session_id)

        question = _next_matching(out, "QUESTION")
        assert "session.message.added" in question
        assert "Which database should the service use?" in question
        assert f"clarion answer {pending_id}" in question
        _next_matching(out, f"task {task_id} pending=clarification")

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        _next_matching(err, "stopped")


def test_watch_notify_prints_a_line_and_rings_the_bell_for_each_new_waiting_item(
    shared_server: ServerProcess,
) -> None:
    task_id = shared_server.create_task("Notified")
    with watching(shared_server, "--notify") as (proc, out, err):
        _next_matching(err, "for questions")
        session_id = shared_server.start_session(task_id, "/scenario ask")
        pending_id = shared_server.wait_for_bundle(session_id)

        line = _next_matching(out, pending_id)
        assert line.startswith("QUESTION Notified: Which database should the service use?")
        assert f"clarion answer {pending_id}" in line
        assert line.endswith("\a")

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        # Printed once: later events re-read the inbox but announce only new items.
        remaining = []
        while not out.empty():
            remaining.append(out.get())
        assert not [r for r in remaining if pending_id in r]


def _interrupt_a_thread_other_than_the_main_one(pid: int) -> None:
    """Ctrl-C as the kernel may deliver it: to any thread of the process that does not block
    it, here the WebSocket's reader thread. tgkill picks the thread; os.kill would not."""
    main_and_others = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
    others = [tid for tid in main_and_others if tid != pid]
    assert others, "clarion watch runs a reader thread beside its main one"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.tgkill(pid, others[0], signal.SIGINT) == 0, os.strerror(ctypes.get_errno())


@pytest.mark.parametrize("args", [("--task", "{task}"), ("--notify",)], ids=["stream", "notify"])
def test_watch_stops_on_ctrl_c_delivered_to_another_thread_with_no_event_coming(
    shared_server: ServerProcess, args: tuple[str, ...]
) -> None:
    task_id = shared_server.create_task("Quiet")
    with watching(shared_server, *(a.format(task=task_id) for a in args)) as (proc, _out, err):
        _next_matching(err, "Watching")
        _interrupt_a_thread_other_than_the_main_one(proc.pid)
        assert proc.wait(timeout=60) == 0
        _next_matching(err, "stopped")
