"""The Python service the Restate peer runs (`python -m bench.restate_service PORT PUBLISH_PORT`).

One workflow, `asker`, loops: it creates an awakeable, publishes the awakeable's id in a durable
step (`ctx.run_typed`, journaled by the Restate server like any side effect), and awaits it. The
client resolves the id over Restate's ingress; the value says whether to ask again. Publishing
is one line, "<workflow key> <awakeable id>", on a TCP connection to the client, so the client
learns of the next question the moment it exists (no polling on either side).

Served by hypercorn on uvloop (as Clarion runs) over HTTP/2 without TLS (h2c), the SDK's
bidirectional protocol.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import restate
import uvloop
from hypercorn.asyncio import serve
from hypercorn.config import Config

asker = restate.Workflow("asker")
_lock = asyncio.Lock()
_channel: list[asyncio.StreamWriter] = []
_PUBLISH_PORT = 0


async def _publish(key: str, awakeable_id: str) -> None:
    async with _lock:
        if not _channel:
            _, writer = await asyncio.open_connection("127.0.0.1", _PUBLISH_PORT)
            _channel.append(writer)
        _channel[0].write(f"{key} {awakeable_id}\n".encode())
        await _channel[0].drain()


@asker.main()
async def run(ctx: restate.WorkflowContext) -> int:
    asked = 0
    while True:
        awakeable_id, answered = ctx.awakeable(type_hint=dict[str, Any])
        await ctx.run_typed("publish", _publish, restate.RunOptions(), ctx.key(), awakeable_id)
        answer = await answered
        asked += 1
        if not answer.get("more", True):
            return asked


def main() -> None:
    global _PUBLISH_PORT
    port, _PUBLISH_PORT = int(sys.argv[1]), int(sys.argv[2])
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.h2_max_concurrent_streams = 2**31 - 1
    config.keep_alive_timeout = 2**31 - 1
    config.accesslog = None
    config.errorlog = None
    uvloop.run(serve(restate.app(services=[asker]), config))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
