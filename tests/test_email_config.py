"""`[notifications.email]` and `[workspaces.NAME.notifications.email]`: read, merged per
workspace key by key, the password from the named environment variable, bad values refused
with the file and key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.config import Settings
from clarion.config.email import load_email
from clarion.domain.notification_events import EVENTS

CONFIG = """
[notifications.email]
host = "smtp.example.com"
port = 587
starttls = true
username = "clarion"
password_env = "SMTP_PASSWORD"
from = "Clarion <clarion@example.com>"
to = ["team@example.com"]
events = ["clarification.requested", "clarification.detached"]

[workspaces.ops.notifications.email]
to = ["ops@example.com", "pager@example.com"]
events = ["clarification.requested"]
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


def test_the_top_level_channel_and_a_workspace_override_are_read(tmp_path: Path) -> None:
    email = load_email(_write(tmp_path, CONFIG), {"SMTP_PASSWORD": "pw"})
    default = email.default
    assert default is not None
    assert (default.host, default.port, default.starttls) == ("smtp.example.com", 587, True)
    assert (default.username, default.password) == ("clarion", "pw")
    assert default.to == ("team@example.com",)
    assert default.events == {"clarification.requested", "clarification.detached"}
    ops = email.channel_for("ops")
    assert ops is not None and ops.key == "email:workspace:ops"
    assert ops.to == ("ops@example.com", "pager@example.com")
    assert ops.host == "smtp.example.com" and ops.password == "pw"  # inherited
    assert ops.events == {"clarification.requested"}
    assert email.channel_for("other") is default
    assert {c.key for c in email.channels()} == {"email:default", "email:workspace:ops"}


def test_settings_load_the_email_table(tmp_path: Path) -> None:
    path = _write(tmp_path, 'notifications.email = {host = "h", from = "a@b.c", to = "d@e.f"}')
    settings = Settings.load(config_file=path, env={})
    assert settings.email.default is not None
    assert settings.email.default.port == 25 and settings.email.default.to == ("d@e.f",)
    assert settings.email.default.events == frozenset(EVENTS)


def test_no_table_no_email(tmp_path: Path) -> None:
    assert load_email(_write(tmp_path, ""), {}).channels() == ()
    assert load_email(None, {}).channels() == ()


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('[notifications.email]\nfrom = "a@b.c"\nto = ["d@e.f"]', "notifications.email.host"),
        ('[notifications.email]\nhost = "h"\nto = ["d@e.f"]', "notifications.email.from"),
        ('[notifications.email]\nhost = "h"\nfrom = "a@b.c"', "notifications.email.to"),
        ('[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = []', "notifications.email.to"),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["x@y.z\\nBcc: e@v.il"]',
            r"notifications.email.to\[0\]",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f", "a@b c"]',
            r"notifications.email.to\[1\] must be an email address, got 'a@b c'",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "\\"a@b"\nto = ["d@e.f"]',
            r"notifications.email.from must be an email address",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f"]\nport = 0',
            "notifications.email.port",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f"]\nevents = ["x"]',
            "unknown event",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f"]\nsmtp = 1',
            "unknown key",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f"]\n'
            'username = "u"\npassword_env = "NOT_SET_HERE"',
            "NOT_SET_HERE is not set",
        ),
        (
            '[notifications.email]\nhost = "h"\nfrom = "a@b.c"\nto = ["d@e.f"]\nusername = "u"',
            "go together",
        ),
        ('[workspaces.ops.notifications.email]\nto = ["d@e.f"]', "workspaces.ops"),
    ],
)
def test_a_bad_email_table_is_refused_naming_the_key(
    tmp_path: Path, text: str, complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        load_email(_write(tmp_path, text), {})
