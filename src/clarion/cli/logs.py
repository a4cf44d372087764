"""Structured log lines for the server: one line per record, its ids as key=value pairs or,
with `--log-format json`, as the fields of one JSON object per line."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import anyio

from clarion.runtime.log_fields import process_fields

LOG_FORMATS = ("text", "json")

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


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time`, `level`, `logger`, `message`, then the record's own
    fields (`task_id`, `session_id`, `turn_id`, `pending_id`, `replica`, ...) and the process's
    (`replica` in cluster mode), and `exception` with the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in process_fields().items():
            body[key] = value
        for key, value in record.__dict__.items():
            if key not in _STANDARD:
                body[key] = value
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            body["exception"] = record.exc_text
        # A field no JSON type holds (an id object, an exception) is written as its text.
        return json.dumps(body, default=str, ensure_ascii=False)


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


class ClosedMcpSessions(logging.Filter):
    """The MCP SDK answers a notification (say `notifications/cancelled` from an agent that gave
    up on a call) with 202 before it hands it to the session, which the agent may have closed
    meanwhile; the SDK then logs the closed stream with a traceback. Nothing is lost (the call
    it cancels already ended): one info line, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, anyio.ClosedResourceError):
            record.msg, record.args = "MCP message for a session its client already closed", ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _add_filter(logger_name: str, kind: type[logging.Filter]) -> None:
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, kind) for f in logger.filters):
        logger.addFilter(kind())


def configure_logging(level: str = "INFO", log_format: str = "text") -> None:
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r} (choose text or json)")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party request logs drown the lifecycle lines.
    for noisy in ("httpx", "httpx2", "mcp", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _add_filter("uvicorn.error", ClientFrameErrors)
    _add_filter("mcp.server.streamable_http", ClosedMcpSessions)
