"""One agent's output, handed to the sink in the order it happened.

Imported by `clarion.agents.running_agent` only. Everything the agent streams, every cancel
acknowledgement, every prompt end and its exit go through one FIFO queue, and one consumer task
hands them to the sink: a prompt's `PromptFinished` always follows all of its outputs.
"""

from __future__ import annotations

import asyncio
import logging

from clarion.ports import AgentExited, AgentOutput, AgentSink, PromptFinished

logger = logging.getLogger(__name__)

Item = AgentOutput | PromptFinished | AgentExited


class OrderedOutput:
    def __init__(self, session_id: str, sink: AgentSink) -> None:
        self._session_id = session_id
        self._sink = sink
        self._queue: asyncio.Queue[Item | None] = asyncio.Queue()  # None: the consumer stops

    def put(self, item: Item) -> None:
        self._queue.put_nowait(item)

    def end(self) -> None:
        """The consumer stops once it has handed over what was put before."""
        self._queue.put_nowait(None)

    async def consume(self) -> None:
        """Hand each item to the sink in order until `end()`; a sink's failure is logged and
        the next item still goes."""
        while True:
            item = await self._queue.get()
            if item is None:
                return
            try:
                if isinstance(item, PromptFinished):
                    await self._sink.on_prompt_finished(item)
                elif isinstance(item, AgentExited):
                    await self._sink.on_agent_exited(item)
                else:
                    await self._sink.on_output(item)
            except Exception:
                logger.exception(
                    "agent sink failed on %s",
                    type(item).__name__,
                    extra={
                        "session_id": self._session_id,
                        "generation": getattr(item, "generation", None),
                    },
                )
