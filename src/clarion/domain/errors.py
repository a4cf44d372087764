"""The one error tree of Clarion. Edges map it to the wire in one table (api/errors.py).

ClarionError
 +-- NotFound                  the thing does not exist or is not visible to the caller (404)
 +-- InvalidInput              a request or tool input is malformed; nothing was written (400)
 +-- Conflict                  the request is well formed but the state forbids it (409)
 |    +-- NotActive            a clarification bundle is not answerable (carries its state)
 |    |    +-- DecisionNotActive a permission request is no longer decidable (carries the winner)
 |    +-- PendingInput         a workflow move refused while a clarification is active
 |    +-- AgentUnavailable     the session's agent is not running, could not start, or refused
 |    +-- AgentBusy            the agent is already running a prompt (ACP allows one)
 |    +-- SessionBusy          a review refused: the session has an open turn or anything waiting
 |    +-- ClarificationActive  a row of an active bundle cannot be deleted (carries the state)
 +-- Unauthenticated           missing or wrong credentials (401)
 +-- ServiceStarting           startup recovery has not finished (503)
 |    +-- ReplicaUnavailable      cluster mode: the session's replica is gone; nothing applied (503)
 |    +-- ReplicaUnreachable      cluster mode: the session's replica did not answer in time (503)
 +-- RetryableFailure          rolled back; the same request may be sent again (500)
 +-- AcceptedButUnfinalized    accepted; must not be sent again though finalization failed (500)
 |    +-- AcceptedButUnpublished   the agent has it; its successor's publication failed
 +-- ResumeNotAccepted         a detached resume rolled back before the agent got it (internal)
 +-- QuestionDetached          the wait ended without an answer (a tool error, never HTTP)
 +-- Unavailable               an authoritative read could not be made; try again (500)
 |    +-- ProjectionUnavailable   the pending projection could not be read
 |    +-- SummaryConflict         a summary compare-and-set kept losing
 +-- AgentFailure              an agent could not start or failed (carries its stderr)
 +-- InjectedFailure           a fault point fired with action `error`
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ClarionError(Exception):
    """Base of every error Clarion raises on purpose. `code` is the wire code."""

    code = "internal"

    def __init__(self, message: str, **ids: Any) -> None:
        super().__init__(message)
        self.message = message
        self.ids = {k: v for k, v in ids.items() if v is not None}


def field_path(loc: Sequence[Any], root: str) -> str:
    """How an InvalidInput names the field a validator's location points at:
    `("answers", 1, "question_id")` -> `answers[1].question_id`; `root` for the empty path."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or root


class NotFound(ClarionError):
    code = "not_found"


class InvalidInput(ClarionError):
    """`field` names the first bad field as a path such as `answers[1].question_id`."""

    code = "invalid_request"

    def __init__(
        self, message: str, *, field: str | None = None, code: str | None = None, **ids: Any
    ) -> None:
        super().__init__(message, **ids)
        self.field = field
        if code is not None:
            self.code = code


class Conflict(ClarionError):
    code = "conflict"


class NotActive(Conflict):
    """The bundle is superseded, terminal, or already claimed. `response` is the winner, if any."""

    code = "not_active"

    def __init__(
        self,
        message: str,
        *,
        state: str,
        response: dict[str, Any] | None = None,
        delivery: str | None = None,
        **ids: Any,
    ) -> None:
        super().__init__(message, **ids)
        self.state = state
        self.response = response
        # How the winning response reached the agent, when a resend was refused.
        self.delivery = delivery


class DecisionNotActive(NotActive):
    """A permission request already decided, ended with its agent call, or whose agent is
    gone. `decision` is the one that won, if any."""

    def __init__(
        self, message: str, *, state: str, decision: dict[str, Any] | None, **ids: Any
    ) -> None:
        super().__init__(message, state=state, **ids)
        self.decision = decision


class PendingInput(Conflict):
    code = "pending_input"


class AgentUnavailable(Conflict):
    """The session's agent process is not running, could not be started, or did not take the
    request."""

    code = "agent_unavailable"


class AgentBusy(Conflict):
    """A prompt is already running in this session; ACP allows one at a time."""

    code = "agent_busy"


class SessionBusy(Conflict):
    """A review was refused: its session has an open turn, a question or permission request
    waiting, or a queued prompt. Nothing was written."""

    code = "session_busy"


class QuestionDetached(ClarionError):
    """The wait ended without an answer; the bundle stays open and detached."""

    code = "question_detached"


class ClarificationActive(Conflict):
    """A transcript row of a bundle that is still active (an agent may be waiting on it)."""

    code = "clarification_active"

    def __init__(self, message: str, *, state: str, pending_id: str, **ids: Any) -> None:
        super().__init__(message, pending_id=pending_id, **ids)
        self.state = state
        self.pending_id = pending_id


class Unauthenticated(ClarionError):
    code = "unauthenticated"


class ServiceStarting(ClarionError):
    code = "starting"


class ReplicaUnavailable(ServiceStarting):
    """Cluster mode: the replica that runs the session could not be reached, so nothing was
    applied; the body names it. Its sessions are adopted by another replica within the
    replica timeout, so a retry then succeeds."""

    code = "replica_unavailable"

    def __init__(self, message: str, *, replica_id: str | None, replica_url: str | None) -> None:
        super().__init__(message)
        self.replica_id = replica_id
        self.replica_url = replica_url


class ReplicaUnreachable(ServiceStarting):
    """Cluster mode: a request carried to the session's replica got no reply (it died with the
    request in hand, or the deadline passed); it may have been applied there, so the message
    says what a retry does."""

    code = "replica_unreachable"


class RetryableFailure(ClarionError):
    """The bundle is pending again; `code` is `resume_not_accepted` or `delivery_failed`."""

    def __init__(self, message: str, *, code: str, **ids: Any) -> None:
        super().__init__(message, **ids)
        self.code = code


class AcceptedButUnfinalized(ClarionError):
    code = "dispatch_not_finalized"


class AcceptedButUnpublished(AcceptedButUnfinalized):
    """The agent accepted a detached answer's prompt, but its successor's publication failed:
    the answer is delivered, only its bookkeeping is not finished."""


class ResumeNotAccepted(ClarionError):
    """A detached answer's prompt certainly did not reach the agent and its reservation was
    rolled back: the claim may be restored and the answer sent again. Never on the wire: the
    resolver turns it into a retryable RetryableFailure once the claim is restored."""

    code = "resume_not_accepted"


class Unavailable(ClarionError):
    """A read that must be authoritative (a pending projection, a summary confirmation) could
    not be made. Nothing was claimed or changed; the same request may be sent again."""

    code = "unavailable"


class ProjectionUnavailable(Unavailable):
    """The authoritative pending projection could not be read; the request must fail (500)."""

    code = "projection_unavailable"


class SummaryConflict(Unavailable):
    """Compare-and-set kept losing; the summary could not be confirmed."""

    code = "summary_conflict"


class AgentFailure(ClarionError):
    """An agent could not be started or stopped answering. `stderr` is the agent's recent
    standard error (what a person needs to see why), `exit_code` its exit status if it
    exited."""

    code = "agent_unavailable"

    def __init__(
        self, message: str, *, stderr: str = "", exit_code: int | None = None, **ids: Any
    ) -> None:
        super().__init__(message, **ids)
        self.stderr = stderr
        self.exit_code = exit_code


class InjectedFailure(ClarionError):
    code = "injected_failure"
