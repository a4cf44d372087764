"""The SMTP side of an email notification: one message to one server, in a worker thread
(the standard library's smtplib), every step under the channel's deadline. Raises on any
failure (refused connection, a 4xx or 5xx answer, a timeout), so the deliverer retries it.

The message is sent exactly as the outbox stored it: headers, Message-ID and body were fixed
when the event was queued.
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from collections.abc import Awaitable, Callable

from clarion.config.email import EmailChannel
from clarion.domain.emails import envelope_address

# channel, the stored message -> None once the server accepted it; raises otherwise.
SendMail = Callable[[EmailChannel, str], Awaitable[None]]


def _send_blocking(channel: EmailChannel, message: str) -> None:
    with smtplib.SMTP(channel.host, channel.port, timeout=channel.timeout_s) as smtp:
        smtp.ehlo()
        if channel.starttls:
            smtp.starttls(context=ssl.create_default_context())
            smtp.ehlo()
        if channel.username is not None and channel.password is not None:
            smtp.login(channel.username, channel.password)
        refused = smtp.sendmail(
            envelope_address(channel.sender),
            [envelope_address(a) for a in channel.to],
            message.encode("ascii"),
        )
    if refused:  # some recipients refused, some accepted: the accepted ones have it
        raise smtplib.SMTPRecipientsRefused(refused)


async def send_mail(channel: EmailChannel, message: str) -> None:
    await asyncio.to_thread(_send_blocking, channel, message)
