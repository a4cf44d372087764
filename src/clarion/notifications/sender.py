"""The HTTP side of a webhook delivery: one POST with a deadline, the status code back."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

import httpx

# url, headers, raw body -> the HTTP status; raises on a timeout or a connection failure.
Send = Callable[[str, Mapping[str, str], bytes], Awaitable[int]]


@contextlib.asynccontextmanager
async def http_sender(timeout_s: float) -> AsyncIterator[Send]:
    """A sender sharing one connection pool; every request, connect included, ends within
    `timeout_s`. Redirects are not followed: a receiver answers where it was configured."""
    async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as client:

        async def send(url: str, headers: Mapping[str, str], body: bytes) -> int:
            response = await client.post(url, content=body, headers=dict(headers))
            return response.status_code

        yield send
