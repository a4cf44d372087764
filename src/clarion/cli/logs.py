"""Structured log lines for the server: one line per record, ids as key=value pairs."""

from __future__ import annotations

import logging
import sys

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = (
            f"{self.formatTime(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        )
        extras = " ".join(
            f"{key}={value}" for key, value in record.__dict__.items() if key not in _STANDARD
        )
        text = f"{base} {extras}" if extras else base
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


# uvicorn logs a client's invalid UTF-8 text frame with a traceback, after closing the socket
# with 1007 as the protocol says. It is the client's fault, not the server's: one warning line.
_CLIENT_FRAME_ERRORS = frozenset({"Invalid UTF-8 sequence received from client."})


class ClientFrameErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() in _CLIENT_FRAME_ERRORS:
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party request logs drown the lifecycle lines.
    for noisy in ("httpx", "httpx2", "mcp", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    uvicorn_errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, ClientFrameErrors) for f in uvicorn_errors.filters):
        uvicorn_errors.addFilter(ClientFrameErrors())
