"""Answer links for question bundles, and decision links for permission requests: issue one
(an absolute URL with a signed token that expires) and read one back to the id it names (a
token of one kind never reads as the other). Imported by the composition root, which
hands it to the read models, the HTTP edge, the outbox and cluster routing.

The key is the database's (generated once, shared by every replica) or the operator's; the
expiry is counted from when the link was issued, so every read hands out a link good for the
whole configured time. It is rounded up to a step of 1/168 of that time (an hour for the
default week; at least a second), so reads close together hand out the same link.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime

from clarion.domain.links import ANSWER, DECISION, answer_url, decision_url, sign, verify
from clarion.ports import Clock


class AnswerLinks:
    def __init__(
        self, secret: str, ttl_s: float, clock: Clock, base_url: Callable[[], str]
    ) -> None:
        self._secret = secret.encode()
        self._ttl_s = ttl_s
        self._step_s = min(3600.0, max(1.0, ttl_s / 168))
        self._clock = clock
        self._base_url = base_url

    def token_for(self, pending_id: str, purpose: str = ANSWER) -> str:
        until = self._clock.now().timestamp() + self._ttl_s
        rounded = math.ceil(until / self._step_s) * self._step_s
        return sign(self._secret, pending_id, datetime.fromtimestamp(rounded, UTC), purpose)

    def url_for(self, pending_id: str) -> str:
        """The absolute address of the page that answers this bundle."""
        return answer_url(self._base_url(), self.token_for(pending_id))

    def pending_of(self, token: str) -> str | None:
        """The pending id a genuine, unexpired token names; None otherwise."""
        return verify(self._secret, token, self._clock.now())

    def decision_url_for(self, message_id: str) -> str:
        """The absolute address of the page that decides this permission request."""
        return decision_url(self._base_url(), self.token_for(message_id, DECISION))

    def message_of(self, token: str) -> str | None:
        """The permission request's message id a genuine, unexpired decision token names."""
        return verify(self._secret, token, self._clock.now(), DECISION)
