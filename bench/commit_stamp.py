"""`clarion serve` that stamps each answer's 200 with the SQLite commits made by then.

Usage: `python -m bench.commit_stamp serve --port P --database sqlite:///PATH ...` (as
`BenchServer.launcher`). A POST to `.../respond` gets the header `x-bench-wal-commits`: the
commit frames in the database's WAL (`bench.commits.wal_commits`) counted inside the server
the moment its response starts, before a byte of it leaves. Counted by the benchmark after the
200 arrives instead, a write the server makes after the 200 (the task summary's, the resumed
agent's first message) can land first and read as part of the answer. Only the stamped requests
pay for the count; every other request passes straight through one extra call. It patches
FastAPI at run time; nothing in `src/` changes.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from bench.commits import wal_commits

HEADER = b"x-bench-wal-commits"

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]


def _database(argv: list[str]) -> Path:
    url = argv[argv.index("--database") + 1]
    if not url.startswith("sqlite:///"):
        raise SystemExit(f"bench.commit_stamp counts SQLite WAL frames only, not {url}")
    return Path(url.removeprefix("sqlite:///"))


def stamping(send: Send, db: Path) -> Send:
    async def stamped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            headers.append((HEADER, str(wal_commits(db)).encode()))
            message = {**message, "headers": headers}
        await send(message)

    return stamped


def main() -> None:
    from fastapi import FastAPI

    from clarion.cli import main as cli_main

    db = _database(sys.argv)
    call = FastAPI.__call__

    async def counted(self: FastAPI, scope: Message, receive: Any, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/respond"):
            send = stamping(send, db)
        await call(self, scope, receive, send)

    FastAPI.__call__ = counted  # type: ignore[method-assign]
    sys.argv = ["clarion", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
