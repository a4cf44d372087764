"""Per-session admission lanes: the in-memory serialization of prompts for one session.

A lane is a cache of what this process is doing with a session's agent: the prompt generation,
which turn each generation runs in, the prompts queued behind the running one, and whether a
detached-answer reservation is in flight. Nothing here is durable; after a restart every lane
starts empty, which is right because no agent survives a restart.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field


@dataclass(eq=False)
class Lane:
    session_id: str
    # Held while a turn is admitted: from reserving or creating the turn until the agent
    # accepted its prompt. Every prompt path takes it, so admission is serialized.
    admission: asyncio.Lock = field(default_factory=asyncio.Lock)
    generation: int = 0
    running_generation: int | None = None
    turn_by_generation: dict[int, str] = field(default_factory=dict)
    queue: deque[str] = field(default_factory=deque)
    # Set while a detached-answer successor is reserved but not yet published or rolled back.
    reservation_turn_id: str | None = None
    reservation_settled: asyncio.Event = field(default_factory=asyncio.Event)
    # A reservation whose rollback failed: no prompt is admitted until restart recovery.
    blocked_reason: str | None = None
    # Set whenever no prompt is running; waiters use it to see a turn settle.
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    # Generation whose cancellation the watchdog owns; its cancel_ack frames are expected.
    recovery_cancel_generation: int | None = None

    def __post_init__(self) -> None:
        self.idle.set()
        self.reservation_settled.set()

    @property
    def running_turn_id(self) -> str | None:
        """The turn the running prompt belongs to (None while idle)."""
        if self.running_generation is None:
            return None
        return self.turn_by_generation.get(self.running_generation)

    def begin(self, turn_id: str) -> int:
        """Record a new prompt generation running in `turn_id`; returns the generation."""
        self.generation += 1
        self.running_generation = self.generation
        self.turn_by_generation[self.generation] = turn_id
        self.idle.clear()
        return self.generation

    def end(self, generation: int) -> None:
        """The prompt of `generation` returned; the lane is idle if it was the running one."""
        if self.running_generation == generation:
            self.running_generation = None
            self.idle.set()

    def hold_reservation(self, turn_id: str) -> None:
        self.reservation_turn_id = turn_id
        self.reservation_settled.clear()

    def settle_reservation(self) -> None:
        self.reservation_turn_id = None
        self.reservation_settled.set()


class Lanes:
    def __init__(self) -> None:
        self._lanes: dict[str, Lane] = {}

    def get(self, session_id: str) -> Lane:
        lane = self._lanes.get(session_id)
        if lane is None:
            lane = self._lanes[session_id] = Lane(session_id=session_id)
        return lane

    def find(self, session_id: str) -> Lane | None:
        return self._lanes.get(session_id)
