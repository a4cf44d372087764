"""What every channel shares of a notification event (pure): how long a failed delivery
waits before its next attempt."""

from __future__ import annotations

from clarion.domain.notification_events import retry_delay


def test_retry_delays_double_up_to_the_cap() -> None:
    assert [retry_delay(n, 1.0, 5.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
