"""Fixtures for the access-control suite: one server with `--auth` and two users, shared by a
module, with tokens issued by running `clarion token create` against the server's database."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.harness import ServerProcess, running_server


def create_token(database_url: str | None, user: str, workspace: str, home: Path) -> str:
    """Run the real command (forked like the tests' servers); its stdout must be exactly one
    line: the token."""
    database = [] if database_url is None else ["--database", database_url]
    result = forkserver.run(
        ["token", "create", "--user", user, "--workspace", workspace, *database],
        env={"CLARION_HOME": str(home), "PATH": "/usr/bin:/bin"},
        cwd=Path.cwd(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].strip() == lines[0] and len(lines[0]) >= 32, result.stdout
    return lines[0]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def as_user(server: ServerProcess, user: str, workspace: str, home: Path) -> ServerProcess:
    """`server` as seen by `user` of `workspace`: a token made by the real command, sent with
    every request of the returned copy."""
    token = create_token(server.database_url, user, workspace, home)
    return dataclasses.replace(server, headers=bearer(token))


def serve_with_auth(database_url: str, tmp_path: Path, config: str) -> Iterator[ServerProcess]:
    """For a fixture: `clarion serve --auth` on `database_url` with this config file's text;
    a question stays live (its asker waits ten minutes)."""
    path = tmp_path / "clarion.toml"
    path.write_text(config)
    workdir = tmp_path / "server"
    workdir.mkdir()
    process = ServerProcess(
        database_url=database_url,
        workdir=workdir,
        args=["--auth", "--config", str(path)],
        env={"CLARION_CLARIFICATION_WAIT_S": "600"},
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


@dataclass
class Team:
    """A server with `--auth`: alice works in `alpha`, bob in `beta`."""

    server: ServerProcess
    alice: ServerProcess  # the same process, sending alice's token
    bob: ServerProcess
    alice_token: str
    bob_token: str


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    tmp = tmp_path_factory.mktemp("auth")
    # CLARION_CLARIFICATION_WAIT_S: the live bundle stays live.
    with running_server(tmp, args=["--auth"], CLARION_CLARIFICATION_WAIT_S="600") as server:
        # Issued while the server runs on the same database.
        alice_token = create_token(server.database_url, "alice", "alpha", tmp)
        bob_token = create_token(server.database_url, "bob", "beta", tmp)
        yield Team(
            server=server,
            alice=dataclasses.replace(server, headers=bearer(alice_token)),
            bob=dataclasses.replace(server, headers=bearer(bob_token)),
            alice_token=alice_token,
            bob_token=bob_token,
        )
