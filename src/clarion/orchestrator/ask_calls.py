"""Which of an agent's tool calls asked Clarion's question, and whether it reported that call
failed.

An agent's own MCP client may give up on `ask_user_question` (its timeout) in the instant
Clarion confirms the person's answer: the result then goes back on a call nobody reads,
although Clarion recorded it delivered. Clarion cannot see that on the MCP side; what it can
see is the agent's report on its ACP stream that the call failed (a `tool_call_update` with
status `failed` on the call whose title names the tool). Only the session's newest such call
counts: an agent asks one question at a time, and the live answer is the newest call's. Not
covered: an agent that reports one call failed and at once asks again, with its new call
answered and confirmed before Clarion has read that call's first frame, would have the newer
answer sent again too (it asks against the tool's own instructions, and a person answers
faster than one ACP frame is read).

In memory, like the watchdog it serves: what it remembers matters only until the turn ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from clarion.domain.permissions import names_ask_tool
from clarion.ports import AgentOutput


@dataclass(slots=True)
class _AskCall:
    tool_call_id: str
    generation: int
    failed: bool = False
    ended: bool = False  # the agent reported an outcome; a later report is not news


class AskCalls:
    def __init__(self) -> None:
        self._newest: dict[str, _AskCall] = {}

    def observe(self, output: AgentOutput) -> bool:
        """Note `output`; True when it is the agent's first report that the session's newest
        question call failed."""
        call_id = str(output.data.get("tool_call_id") or "")
        if output.kind == "tool_call":
            if names_ask_tool(str(output.data.get("title") or "")):
                self._newest[output.session_id] = _AskCall(call_id, output.generation)
                return False
        elif output.kind != "tool_call_update":
            return False
        call = self._newest.get(output.session_id)
        if call is None or call.ended or call.tool_call_id != call_id:
            return False
        status = output.data.get("status")
        if status in ("completed", "failed"):
            call.ended = True
            call.failed = status == "failed"
        return call.failed

    def newest_failed(self, session_id: str) -> int | None:
        """The prompt generation that made the session's newest question call, if the agent
        reported that call failed."""
        call = self._newest.get(session_id)
        return call.generation if call is not None and call.failed else None

    def forget(self, session_id: str) -> None:
        self._newest.pop(session_id, None)
