"""A profile's samples summed by layer, by task and by Clarion function."""

from __future__ import annotations

from bench.profile_layers import tally

LOOP = "serve (clarion/cli/app.py:187);Runner.run (asyncio/runners.py:118)"
LINES = [
    # A request: uvicorn's cycle into Clarion's route, which commits through SQLAlchemy.
    f"{LOOP};RequestResponseCycle.run_asgi (uvicorn/protocols/http/httptools_impl.py:401);"
    "Resolver.respond (clarion/clarification/resolver.py:89);"
    "DefaultDialect.do_commit (sqlalchemy/engine/default.py:954) 6",
    f"{LOOP};RequestResponseCycle.run_asgi (uvicorn/protocols/http/httptools_impl.py:401);"
    "RequestResponseCycle.send (uvicorn/protocols/http/httptools_impl.py:500) 3",
    # A background job of the supervisor, named by the job rather than the wrapper.
    f"{LOOP};_run (clarion/runtime/supervisor.py:77);"
    "Resolver._publish (clarion/clarification/resolver.py:217);dumps (json/__init__.py:231) 1",
    "a truncated stack (nowhere/x.py:1) 2",
    # The loop polling, and a pool thread blocked on its queue (not CPU: left out).
    f"{LOOP} 4",
    "Thread._bootstrap (threading.py:995);_worker (concurrent/futures/thread.py:81) 5",
]


def test_samples_are_summed_by_innermost_layer_root_task_and_clarion_frame() -> None:
    layers, roots, clarion = tally(LINES)

    # SQLAlchemy's commit calls the driver: its own time is the SQL driver's.
    assert layers == {
        "SQL driver": 6,
        "event loop (uvloop's C loop)": 4,
        "socket writes": 3,
        "JSON": 1,
        "other": 2,
    }
    assert roots == {
        "RequestResponseCycle.run_asgi (uvicorn/protocols/http/httptools_impl.py)": 9,
        "Resolver._publish (clarion/clarification/resolver.py)": 1,
        "(stack cut short: not sampled to the loop)": 2,
        "(the loop itself)": 4,
    }
    assert clarion["Resolver.respond (clarion/clarification/resolver.py)"] == 6
    assert clarion["serve (clarion/cli/app.py)"] == 3 + 4  # no Clarion frame nearer the leaf
    assert clarion["Resolver._publish (clarion/clarification/resolver.py)"] == 1


def test_a_process_cpu_is_read_per_thread_name_without_the_thread_number() -> None:
    import os
    import threading

    from bench.profiled import thread_cpu

    done = threading.Event()
    worker = threading.Thread(target=done.wait, name="worker-7")
    worker.start()
    try:
        by_name = thread_cpu(os.getpid())
    finally:
        done.set()
        worker.join()

    assert sum(by_name.values()) > 0  # this process has spent CPU on its imports at least
    assert all(not name[-1:].isdigit() for name in by_name)
