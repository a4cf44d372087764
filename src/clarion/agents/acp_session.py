"""Opening an agent's ACP session: initialize, then session/load or session/new, each offering
Clarion's MCP endpoint. Imported by `clarion.agents.running_agent` only."""

from __future__ import annotations

import logging

import acp
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
)

from clarion.domain.permissions import CLARION_MCP_SERVER

logger = logging.getLogger(__name__)

TOKEN_HEADER = "X-Clarion-Token"
MCP_SERVER_NAME = CLARION_MCP_SERVER


async def initialize(conn: ClientSideConnection) -> InitializeResponse:
    """ACP initialize: what the agent can do (session/load, HTTP MCP servers, ...)."""
    return await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="clarion", version="0.1.0"),
    )


async def open_acp_session(
    conn: ClientSideConnection,
    init: InitializeResponse,
    *,
    session_id: str,
    profile: str,
    mcp_url: str,
    mcp_token: str,
    cwd: str,
    resume_id: str | None,
) -> tuple[str, bool]:
    """(the ACP session id, whether it was loaded): session/load of `resume_id` when the agent
    supports it (it keeps its conversation), else session/new. Clarion's MCP endpoint is
    offered either way."""
    caps = init.agent_capabilities
    if caps is None or caps.mcp_capabilities is None or not caps.mcp_capabilities.http:
        # Offered anyway: without it the agent cannot ask questions at all.
        logger.warning(
            "agent does not advertise HTTP MCP support",
            extra={"session_id": session_id, "profile": profile},
        )
    server = HttpMcpServer(
        type="http",
        name=MCP_SERVER_NAME,
        url=mcp_url,
        headers=[HttpHeader(name=TOKEN_HEADER, value=mcp_token)],
    )
    if resume_id and caps is not None and caps.load_session:
        try:
            await conn.load_session(cwd=cwd, session_id=resume_id, mcp_servers=[server])
        except Exception as exc:
            logger.warning(
                "agent could not load its earlier session; starting a new one: %r",
                exc,
                extra={"session_id": session_id, "acp_session_id": resume_id},
            )
        else:
            return resume_id, True
    response = await conn.new_session(cwd=cwd, mcp_servers=[server])
    return response.session_id, False
