"""The test servers' fork server (tests/forkserver.py, tests/zygote.py): a forked `clarion` is
the process `python -m clarion` would be, with its own pid and process group, the environment,
directory and streams it was given and its exit status; its CPU counts in the CPU report."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests import forkserver
from tests.e2e.harness import FAST_TIMEOUTS, wait_until
from tests.ports import free_port


def _fork(args: list[str], env: dict[str, str], cwd: Path) -> forkserver.ForkedProcess:
    out, err = (cwd / "out").open("wb"), (cwd / "err").open("wb")
    with out, err, open(os.devnull, "rb") as devnull:
        return forkserver.fork_server().popen(
            args,
            env=env,
            cwd=cwd,
            stdin=devnull.fileno(),
            stdout=out.fileno(),
            stderr=err.fileno(),
            start_new_session=True,
        )


def test_a_forked_command_runs_in_its_directory_with_its_environment_and_streams(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.toml").write_text("[nonsense\n")
    env = {"CLARION_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    env["CLARION_CONFIG"] = "bad.toml"  # relative: found only in the child's directory

    child = _fork(["serve", "--port", "0"], env, tmp_path)

    assert child.wait(timeout=60) == 2
    assert (tmp_path / "err").read_text().startswith("clarion: config file bad.toml is not valid")
    assert (tmp_path / "out").read_text() == ""


def test_a_forked_server_reads_its_option_defaults_from_its_own_environment(
    tmp_path: Path,
) -> None:
    """`clarion serve`'s log format default comes from CLARION_LOG_FORMAT when the command
    module is imported; the zygote imported everything before this child's environment."""
    port = free_port()
    env = {**os.environ, **FAST_TIMEOUTS, "CLARION_HOME": str(tmp_path / "home")}
    env["CLARION_LOG_FORMAT"] = "json"
    database = f"sqlite:///{tmp_path / 'c.db'}"
    child = _fork(["serve", "--port", str(port), "--database", database], env, tmp_path)
    try:
        locked = wait_until(
            lambda: next(
                (
                    json.loads(line)
                    for line in (tmp_path / "err").read_text().splitlines()
                    if line.startswith("{") and "single-server lock held" in line
                ),
                None,
            ),
            what="a JSON log line saying the server holds its database",
        )
        assert locked["lock"] == f"{tmp_path / 'c.db'}.server.lock"
        # The lock names its holder: the pid the test knows.
        assert (tmp_path / "c.db.server.lock").read_text().endswith(f"pid {child.pid}")
        os.killpg(child.pid, signal.SIGKILL)  # its own process group, as start_new_session
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)


def test_an_ended_childs_cpu_counts_as_reaped(tmp_path: Path) -> None:
    before = forkserver.reaped_cpu()
    env = {"CLARION_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    child = _fork(["serve", "--port", "0", "--config", "missing.toml"], env, tmp_path)
    assert child.wait(timeout=60) == 2
    assert forkserver.reaped_cpu() > before
