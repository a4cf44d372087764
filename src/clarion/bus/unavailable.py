"""`NatsUnavailable`, apart from the NATS bus so that a server on the in-process bus can name it
without importing the NATS client."""

from __future__ import annotations


class NatsUnavailable(ConnectionError):
    """NATS could not be reached, or did not accept a publication. The message names the URL."""
