"""A real SMTP server on loopback for the email tests (aiosmtpd), recording what it accepted;
and one in a child process that hangs in the middle of a message, for a kill -9."""

from __future__ import annotations

import email
import email.policy
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    authenticated: bool = False

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed

    @property
    def message_id(self) -> str:
        return str(self.message["Message-ID"])

    def body(self, subtype: str) -> str:
        for part in self.message.walk():
            if part.get_content_type() == f"text/{subtype}":
                return str(part.get_content())
        raise AssertionError(f"no text/{subtype} part")


class Mailbox:
    """Every message the server accepted (250 after DATA), in order."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self.arrived = threading.Condition(self._lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.arrived:
            self.received.append(
                Received(
                    envelope.mail_from,
                    tuple(envelope.rcpt_tos),
                    bytes(envelope.content),
                    bool(getattr(session, "authenticated", False)),
                )
            )
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        with self.arrived:
            ok = self.arrived.wait_for(lambda: len(self.received) >= count, timeout)
            assert ok, f"{len(self.received)} of {count} messages arrived in {timeout} s"
            return list(self.received)

    @contextmanager
    def running(self, login: tuple[str, str] | None = None) -> Iterator[Mailbox]:
        """Serve until the block ends; with `login`, AUTH is offered over plain TCP (loopback
        only) and only that login is accepted."""
        options: dict[str, Any] = {}
        if login is not None:
            options = {
                "auth_require_tls": False,
                "authenticator": _only(*login),
            }
        controller = Controller(self, hostname="127.0.0.1", port=self.port, **options)
        controller.start()
        try:
            yield self
        finally:
            controller.stop()


def _only(user: str, password: str) -> Any:
    def authenticate(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            user.encode(),
            password.encode(),
        )
        return AuthResult(success=ok, handled=False)

    return authenticate


HANGING_SERVER = """
import asyncio, sys, pathlib
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

class Hang:
    async def handle_DATA(self, server, session, envelope):
        pathlib.Path(sys.argv[2]).write_bytes(envelope.content)
        await asyncio.sleep(3600)  # never answers: killed with SIGKILL mid-delivery
        return "250 never"

controller = Controller(Hang(), hostname="127.0.0.1", port=int(sys.argv[1]))
controller.start()
print("ready", flush=True)
sys.stdin.read()
"""


@contextmanager
def hanging_server(port: int, marker: Path) -> Iterator[subprocess.Popen[str]]:
    """An SMTP server in a child process that takes a message's data and never answers;
    `marker` holds the data once it arrived."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_SERVER, str(port), str(marker)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
