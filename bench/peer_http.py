"""A lean HTTP/1.1 client for the service peers' loops: one keep-alive connection per loop.

The peers' rows count the server side's CPU per cycle, and the client shares the 2 cores with
it; a request here costs a few dozen microseconds of the bench's CPU where a general client
costs several times that. It speaks only what the peers answer: Content-Length or chunked
bodies, JSON in and out.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class HttpError(RuntimeError):
    pass


class Http1:
    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        return self._reader, self._writer

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        """(status, body). A connection the server closed is opened again once."""
        payload = b"" if body is None else json.dumps(body).encode()
        kind = "" if body is None else "Content-Type: application/json\r\n"
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            f"{kind}Content-Length: {len(payload)}\r\n\r\n"
        ).encode()
        for attempt in (1, 2):
            reader, writer = await self._connect()
            try:
                writer.write(head + payload)
                return await _response(reader)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def json(self, method: str, path: str, body: Any = None) -> Any:
        status, data = await self.request(method, path, body)
        if status >= 300:
            raise HttpError(f"{method} {path}: {status} {data[:300]!r}")
        return json.loads(data) if data.strip() else None

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def _response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            chunks.append(data[:-2])
        return status, b"".join(chunks)
    return status, await reader.readexactly(int(headers.get("content-length", "0")))
