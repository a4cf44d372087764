"""One prompt sent to an agent, and how it ended. Imported by `clarion.agents.running_agent`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import acp
from acp.client.connection import ClientSideConnection


@dataclass(slots=True, eq=False)
class PromptRun:
    generation: int
    sent: asyncio.Future[None]  # done once the prompt frame was written to the agent's stdin
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    abort_reason: str | None = None  # set by whoever aborts the run; wins over the error seen


@dataclass(frozen=True, slots=True)
class PromptEnd:
    stop_reason: str
    error: str | None = None
    lost: bool = False  # the connection failed or the run was aborted: is the process going?


async def send_prompt(
    conn: ClientSideConnection, acp_session_id: str, text: str, run: PromptRun
) -> PromptEnd:
    """session/prompt until the agent ends the turn; a failure becomes an `error` end."""
    try:
        response = await conn.prompt(session_id=acp_session_id, prompt=[acp.text_block(text)])
    except asyncio.CancelledError:
        # Only the running agent cancels a run (stop, exit watcher, refused hand-over).
        return PromptEnd("error", run.abort_reason or "prompt aborted", lost=True)
    except ConnectionError as exc:
        return PromptEnd("error", run.abort_reason or f"agent connection lost ({exc})", lost=True)
    except Exception as exc:  # the agent answered the prompt with an error
        return PromptEnd("error", run.abort_reason or describe_error(exc))
    return PromptEnd(response.stop_reason)


def describe_error(exc: Exception) -> str:
    """An agent's error answer in words: JSON-RPC errors carry the reason in `data`."""
    text = f"{type(exc).__name__}: {exc}"
    data = getattr(exc, "data", None)
    if isinstance(data, dict):
        details = data.get("details") or data.get("message")
        if details:
            text += f" ({details})"
    return text
