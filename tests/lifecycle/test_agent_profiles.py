"""`GET /agents`: the configured agent profiles by name, for a client's "start a session" choice,
over real HTTP on both databases."""

from __future__ import annotations

import httpx

from tests.lifecycle.harness import Lifecycle
from tests.projection.served import serving


async def test_the_configured_agent_profiles_are_listed_by_name_only(life: Lifecycle) -> None:
    async with serving(life) as base, httpx.AsyncClient(base_url=base, timeout=10) as http:
        reply = await http.get("/agents")
    assert reply.status_code == 200, reply.text
    agents = reply.json()["agents"]
    assert agents == [{"name": n} for n in sorted(life.app.services.sessions.agents)]
    assert {"name": "builtin"} in agents
