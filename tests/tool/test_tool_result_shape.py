"""What an agent's model sees from `ask_user_question`: the contract's answer text, once.

Agents forward a tool's structured content to their model when the tool declares an output
schema; a `{result: string}` schema made the model read the answer as JSON inside a string. The
tool declares none, so the only thing to forward is its text.
"""

from __future__ import annotations

import json
from typing import Any, cast

from mcp import Client

from clarion.clarification.asker import Asker
from clarion.mcp.tools import build_mcp_server

ANSWER = json.dumps({"db": {"selected_options": ["postgres"], "custom_text": ""}})
QUESTIONS = {
    "questions": [{"id": "db", "prompt": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]
}


class AnsweringAsker:
    """Stands in for the lifecycle: every question is answered at once with `ANSWER`."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def ask(
        self, session_id: str, arguments: object, progress: Any, dropped: Any = None
    ) -> str:
        self.asked.append(arguments)
        return ANSWER


async def test_ask_user_question_declares_no_output_schema() -> None:
    async with Client(build_mcp_server(cast(Asker, AnsweringAsker()))) as client:
        tools = (await client.list_tools()).tools
    (tool,) = tools
    assert tool.name == "ask_user_question"
    assert tool.output_schema is None


async def test_an_answer_reaches_the_agent_as_the_contract_json_text_only() -> None:
    asker = AnsweringAsker()
    async with Client(build_mcp_server(cast(Asker, asker))) as client:
        result = await client.call_tool("ask_user_question", QUESTIONS)
    assert asker.asked and not result.is_error
    assert [block.type for block in result.content] == ["text"]
    assert getattr(result.content[0], "text", None) == ANSWER
    assert result.structured_content is None
