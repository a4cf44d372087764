"""Email end to end: a real `clarion serve` with `[notifications.email]`, a real SMTP server on
loopback (aiosmtpd), and the server killed with SIGKILL right after the SMTP server accepted a
message and before the outbox recorded it. The message is sent again after the restart with the
same Message-ID: delivery is at least once, and a duplicate is recognisable as one."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.harness import ServerProcess, wait_until
from tests.email.smtp import Mailbox
from tests.ports import free_port

pytestmark = pytest.mark.e2e


def _config(path: Path, port: int) -> Path:
    config = path / "clarion.toml"
    config.write_text(
        "[notifications.email]\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        'from = "Clarion <clarion@example.com>"\n'
        'to = ["alice@example.com"]\n'
        'events = ["clarification.requested"]\n'
        "timeout_s = 10\n"
    )
    return config


def _delivered(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT count(*) FROM webhook_deliveries WHERE delivered_at IS NOT NULL"
        ).fetchone()
    return int(row[0])


def test_a_server_killed_after_the_smtp_server_accepted_sends_it_again_with_the_same_id(
    tmp_path: Path,
) -> None:
    mailbox = Mailbox(free_port())
    db = tmp_path / "clarion.db"
    workdir = tmp_path / "server"
    workdir.mkdir()
    server = ServerProcess(
        database_url=f"sqlite:///{db}",
        workdir=workdir,
        env={
            "CLARION_CONFIG": str(_config(tmp_path, mailbox.port)),
            "CLARION_WEBHOOK_BACKOFF_S": "0.1",
            "CLARION_WEBHOOK_MAX_DELAY_S": "0.3",
            "CLARION_CLARIFICATION_WAIT_S": "600",
            "CLARION_NO_SAMPLE": "1",
        },
    )
    with mailbox.running():
        try:
            server.start(failpoints="email.after_send=crash")
            task_id = server.create_task("Billing service")
            server.start_session(task_id, "/scenario ask")
            [first] = mailbox.wait_for(1)
            assert server.wait_exit(30) == 137  # killed before it recorded the delivery
            assert _delivered(db) == 0

            server.start()
            copies = mailbox.wait_for(2)
            wait_until(lambda: _delivered(db) == 1, timeout=30, what="the delivery recorded")
            # A second question after the restart arrives once.
            server.start_session(server.create_task("Second task"), "/scenario ask")
            received = mailbox.wait_for(3)
            wait_until(lambda: _delivered(db) == 2, timeout=30, what="both recorded")
        finally:
            server.stop()
    assert copies[1].message_id == first.message_id
    assert copies[1].raw == first.raw  # byte for byte: built once, when the event was queued
    per_id = Counter(m.message_id for m in received)
    assert sorted(per_id.values()) == [1, 2]
    assert "Billing service" in first.message["Subject"]
