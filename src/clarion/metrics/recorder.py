"""The in-process counters and histograms, on a registry of this server's own (two servers in
one test process never share figures).

Every label value is created up front, so a scrape shows each series at 0 before the first
event, and recording is a dict lookup and an increment: the answer path pays nothing more.
"""

from __future__ import annotations

from typing import get_args

from prometheus_client import CollectorRegistry, Counter, Histogram

from clarion.metrics.gc_time import process_gc_time
from clarion.ports.metrics import AnswerOutcome, DeliveryResult, RespondPath

# From a millisecond (a live answer on a quiet server) to the resume bound's order (30 s).
_RESPOND_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class PrometheusMetrics:
    """Implements `clarion.ports.metrics.Metrics`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        answers = Counter("clarion_answers", "Answer requests by outcome", ["outcome"], registry=r)
        self._answers = {o: answers.labels(o) for o in get_args(AnswerOutcome)}
        respond = Histogram(
            "clarion_respond_seconds",
            "Time from an answer request to its accepted reply, by delivery path",
            ["path"],
            buckets=_RESPOND_BUCKETS,
            registry=r,
        )
        self._respond = {p: respond.labels(p) for p in get_args(RespondPath)}
        self._starts = Counter("clarion_agent_starts", "Agents started", registry=r)
        self._failures = Counter(
            "clarion_agent_failures", "Agent failures recorded (start, prompt, exit)", registry=r
        )
        self._resumes = Counter(
            "clarion_resumes", "Detached answers that resumed the agent in a new turn", registry=r
        )
        self._ambiguous = Counter(
            "clarion_ambiguous_deliveries",
            "Answers startup recovery found possibly undelivered",
            registry=r,
        )
        attempts = Counter(
            "clarion_webhook_attempts", "Webhook POSTs by result", ["result"], registry=r
        )
        self._attempts = {w: attempts.labels(w) for w in get_args(DeliveryResult)}
        self._carried = Counter(
            "clarion_carried_requests",
            "Cluster: requests carried to the replica that owns their session",
            registry=r,
        )
        self._adopted = Counter(
            "clarion_adopted_sessions", "Cluster: sessions adopted from dead replicas", registry=r
        )
        r.register(process_gc_time())

    def answer(self, outcome: AnswerOutcome) -> None:
        self._answers[outcome].inc()

    def respond_seconds(self, path: RespondPath, seconds: float) -> None:
        self._respond[path].observe(seconds)

    def agent_started(self) -> None:
        self._starts.inc()

    def agent_failed(self) -> None:
        self._failures.inc()

    def resumed(self) -> None:
        self._resumes.inc()

    def ambiguous_deliveries(self, count: int) -> None:
        if count:
            self._ambiguous.inc(count)

    def delivery_attempt(self, result: DeliveryResult) -> None:
        self._attempts[result].inc()

    def carried_request(self) -> None:
        self._carried.inc()

    def adopted(self, sessions: int) -> None:
        if sessions:
            self._adopted.inc(sessions)
