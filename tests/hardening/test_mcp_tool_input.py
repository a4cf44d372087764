"""The MCP tool's input schema states its limits, and a bad call gets one clean error that names
the field once: no pydantic dump, no docs URL, no repeated path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.hardening.mcp_rig import mcp_rig, messages_of, rpc

TWO = [{"label": "a"}, {"label": "b"}]


async def input_schema(tmp_path: Path) -> dict[str, Any]:
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()
        response = await rig.post(rpc(2, "tools/list", {}), session)
        (tool,) = messages_of(response)[0]["result"]["tools"]
        assert tool["name"] == "ask_user_question"
        return dict(tool["inputSchema"])


async def test_input_schema_states_counts_and_non_empty_text(tmp_path: Path) -> None:
    schema = await input_schema(tmp_path)
    questions = schema["properties"]["questions"]
    assert (questions["minItems"], questions["maxItems"]) == (1, 4)
    question = schema["$defs"]["QuestionIn"]
    assert (
        question["properties"]["options"]["minItems"],
        question["properties"]["options"]["maxItems"],
    ) == (2, 6)
    assert question["properties"]["prompt"]["minLength"] == 1
    assert schema["$defs"]["OptionIn"]["properties"]["label"]["minLength"] == 1
    assert set(question["required"]) == {"prompt", "options"}


@pytest.mark.parametrize(
    ("arguments", "field", "says"),
    [
        ({"questions": [{"options": TWO}]}, "questions[0].prompt", "is required"),
        (
            {"questions": [{"prompt": "", "options": TWO}]},
            "questions[0].prompt",
            "must not be empty",
        ),
        ({"questions": [{"prompt": "x", "options": TWO[:1]}]}, "questions[0].options", "2 to 6"),
        ({"questions": []}, "questions", "1 to 4"),
        (
            {"questions": [{"prompt": "x", "options": [{"label": ""}, {"label": "b"}]}]},
            "questions[0].options[0].label",
            "must not be empty",
        ),
        ({"questions": "nope"}, "questions", "list"),
        ({}, "questions", "is required"),
        (
            {
                "questions": [
                    {
                        "prompt": "x",
                        "options": [
                            {"label": "a", "option_id": "same"},
                            {"label": "b", "option_id": "same"},
                        ],
                    }
                ]
            },
            "questions[0].options[1].option_id",
            "duplicate",
        ),
    ],
)
async def test_a_bad_call_gets_one_clean_error_naming_the_field(
    tmp_path: Path, arguments: dict[str, Any], field: str, says: str
) -> None:
    async with mcp_rig(tmp_path) as rig:
        session = await rig.initialize()
        message = await rig.call(session, arguments)
        result = message["result"]
        assert result["isError"] is True
        (content,) = result["content"]
        text = content["text"]
        assert text.startswith(f"invalid {field}: "), text
        assert says in text
        assert text.count(f"{field}:") == 1, text  # the path once, not repeated
        assert "pydantic" not in text and "http" not in text and "\n" not in text
        assert "validation error" not in text
        # Nothing was asked: no question reached the transcript.
        page = await rig.app.stores.reads.list_messages(rig.session_id, limit=100)
        assert not [m for m in page.messages if m.type.value == "clarification_request"]
