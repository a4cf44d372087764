"""Seeding large databases fast: build one template through the store API, clone it in bulk.

`clarion.store.open_store` + `add_message`/`create_bundle` cost about 10 ms per call here
(one guarded transaction each), so 100,000 history rows or 10,000 bundles one call at a time
would take longer than the whole benchmark budget. Instead each template (a session, its
turns and messages) is written through the store API exactly as the server would write it,
then copied with fresh ids in multi-row INSERTs through the same schema tables. Every id in
a copied row, including ids inside JSON metadata, is remapped, so copies are independent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select

from clarion.domain.ids import new_id
from clarion.store.db.engine import open_engine
from clarion.store.db.schema import task_session_messages as messages
from clarion.store.db.schema import task_session_turns as turns
from clarion.store.db.schema import task_sessions as sessions

BATCH = 2_000


def _remap(row: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, str) and value in ids:
            out[key] = ids[value]
        elif isinstance(value, dict) and value:
            text = json.dumps(value)
            for old, new in ids.items():
                if old in text:
                    text = text.replace(old, new)
            out[key] = json.loads(text)
        else:
            out[key] = value
    return out


async def _insert(conn: Any, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), BATCH):
        await conn.execute(insert(table), rows[start : start + BATCH])


async def clone_sessions(
    url: str, template_ids: Sequence[str], copies: int, task_ids: Sequence[str]
) -> None:
    """Copy the template sessions (with all turns and messages) `copies` times each, spread
    round-robin over `task_ids`."""
    engine = open_engine(url)
    try:
        async with engine.begin() as conn:
            s_rows = [
                dict(r._mapping)
                for r in await conn.execute(select(sessions).where(sessions.c.id.in_(template_ids)))
            ]
            t_rows = [
                dict(r._mapping)
                for r in await conn.execute(
                    select(turns).where(turns.c.task_session_id.in_(template_ids))
                )
            ]
            m_rows = [
                dict(r._mapping)
                for r in await conn.execute(
                    select(messages).where(messages.c.task_session_id.in_(template_ids))
                )
            ]
            template_ids_all = {r["id"] for r in s_rows + t_rows + m_rows}
            template_ids_all |= {r["pending_id"] for r in m_rows if r["pending_id"]}
            new_s: list[dict[str, Any]] = []
            new_t: list[dict[str, Any]] = []
            new_m: list[dict[str, Any]] = []
            for i in range(copies):
                ids = {old: new_id() for old in template_ids_all}
                task = task_ids[i % len(task_ids)]
                for r in s_rows:
                    new_s.append({**_remap(r, ids), "task_id": task})
                for r in t_rows:
                    new_t.append({**_remap(r, ids), "task_id": task})
                for r in m_rows:
                    new_m.append({**_remap(r, ids), "task_id": task})
            await _insert(conn, sessions, new_s)
            await _insert(conn, turns, new_t)
            await _insert(conn, messages, new_m)
    finally:
        await engine.dispose()


async def clone_turn(url: str, turn_id: str, copies: int) -> None:
    """Copy one (completed) turn and its messages `copies` times within its session."""
    engine = open_engine(url)
    try:
        async with engine.begin() as conn:
            t_row = dict(
                (await conn.execute(select(turns).where(turns.c.id == turn_id))).one()._mapping
            )
            m_rows = [
                dict(r._mapping)
                for r in await conn.execute(select(messages).where(messages.c.turn_id == turn_id))
            ]
            new_t: list[dict[str, Any]] = []
            new_m: list[dict[str, Any]] = []
            for _ in range(copies):
                ids = {turn_id: new_id(), **{r["id"]: new_id() for r in m_rows}}
                new_t.append(_remap(t_row, ids))
                new_m.extend(_remap(r, ids) for r in m_rows)
            await _insert(conn, turns, new_t)
            await _insert(conn, messages, new_m)
    finally:
        await engine.dispose()
