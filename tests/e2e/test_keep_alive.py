"""An idle kept-alive HTTP connection is the client's to close.

HTTP clients keep a connection open between requests and close it after a few idle seconds of
their own (Node's fetch, which Qwen Code's and Gemini CLI's MCP clients use: 4 s). A server that
closed it first (uvicorn's default, 5 s) raced the client's next request on it: on a loaded
machine a tool call went out on a connection the server was closing and failed with nothing
reaching the server ("MCP tool execution may have completed before the connection failed")."""

from __future__ import annotations

import socket

from tests.e2e.harness import ServerProcess

CLIENT_IDLE_S = 4.0  # the longest idle time of the clients above
MARGIN_S = 2.0


def test_an_idle_kept_alive_connection_outlasts_the_clients_own_idle_timeout(
    module_server: ServerProcess,
) -> None:
    with socket.create_connection(("127.0.0.1", module_server.port), timeout=60) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        response = b""
        while b"\r\n\r\n" not in response:
            response += conn.recv(4096)
        head, _, body = response.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += conn.recv(4096)
        assert head.startswith(b"HTTP/1.1 200")
        # Nothing more may arrive, and the server must not close the connection, while a
        # client would still hold it idle.
        conn.settimeout(CLIENT_IDLE_S + MARGIN_S)
        try:
            extra = conn.recv(1)
        except TimeoutError:
            extra = None
        assert extra is None, "the server closed an idle connection its client still held"
