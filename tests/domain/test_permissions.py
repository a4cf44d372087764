"""The permission policy and the request row's metadata (pure rules)."""

from __future__ import annotations

import json

import pytest

from clarion.domain.models import MessageType
from clarion.domain.permissions import (
    CLARION_MCP_SERVER,
    RAW_INPUT_LIMIT,
    PermissionOption,
    PermissionRules,
    PermissionStatus,
    ToolCallInfo,
    bounded_input,
    decision_of,
    names_ask_tool,
    permission_view,
    pick_option,
    policy_verdict,
    request_metadata,
    status_of,
    status_of_option,
)
from tests.domain.builders import row

ALL = (
    PermissionOption("a1", "Allow", "allow_once"),
    PermissionOption("a2", "Always", "allow_always"),
    PermissionOption("r1", "Reject", "reject_once"),
    PermissionOption("r2", "Never", "reject_always"),
)
RULES = PermissionRules(allow=frozenset({"read"}), reject=frozenset({"execute"}))


def _tool(kind: str = "edit", title: str = "Edit README.md") -> ToolCallInfo:
    return ToolCallInfo("c1", title, kind)


@pytest.mark.parametrize(
    ("kind", "verdict"), [("read", "allow"), ("execute", "reject"), ("edit", None)]
)
def test_the_profile_policy_allows_rejects_or_asks(kind: str, verdict: str | None) -> None:
    assert policy_verdict(RULES, _tool(kind)) == verdict


@pytest.mark.parametrize(
    "title", ["ask_user_question", "mcp__clarion__ask_user_question", "Tool: ask_user_question"]
)
def test_the_question_tool_is_always_allowed_whatever_the_profile_says(title: str) -> None:
    assert names_ask_tool(title)
    rejecting = PermissionRules(reject=frozenset({"other"}))
    assert policy_verdict(rejecting, _tool("other", title)) == "allow"


def _codex_mcp_approval(server: str) -> ToolCallInfo:
    """How codex-acp asks before an MCP tool call: a generic title, the server in the input."""
    raw = {
        "server_name": server,
        "request": {
            "_meta": {"codex_approval_kind": "mcp_tool_call"},
            "message": f'Allow the {server} MCP server to run tool "ask_user_question"?',
        },
    }
    return ToolCallInfo("c1", "Approve MCP tool call", "other", raw)


def test_a_call_to_clarions_own_mcp_server_is_allowed_whatever_its_title() -> None:
    rejecting = PermissionRules(reject=frozenset({"other"}))
    assert policy_verdict(rejecting, _codex_mcp_approval(CLARION_MCP_SERVER)) == "allow"
    # Another MCP server's tool of the same name is the profile's (here: the person's) call.
    assert policy_verdict(PermissionRules(), _codex_mcp_approval("elsewhere")) is None
    # A tool whose input merely mentions the server is not a call to it.
    shell = ToolCallInfo("c2", "Run echo", "execute", {"command": "echo clarion"})
    assert policy_verdict(PermissionRules(), shell) is None


def test_allow_picks_allow_once_first_then_allow_always() -> None:
    assert pick_option(ALL, "allow") == ALL[0]
    assert pick_option(ALL[1:], "allow") == ALL[1]
    assert pick_option(ALL, "reject") == ALL[2]
    assert pick_option((ALL[3],), "reject") == ALL[3]
    assert pick_option((ALL[2],), "allow") is None


def test_an_option_maps_to_its_status_and_decision() -> None:
    assert status_of_option(ALL[1]) is PermissionStatus.APPROVED
    assert status_of_option(ALL[3]) is PermissionStatus.REJECTED
    assert decision_of(ALL[0], "policy") == {
        "option_id": "a1",
        "kind": "allow_once",
        "decided_by": "policy",
    }
    assert decision_of(None, "user") == {"decided_by": "user"}


def test_a_large_raw_input_is_stored_cut_and_says_so() -> None:
    small = {"path": "README.md"}
    assert bounded_input(small) == small
    assert bounded_input(None) is None
    big = bounded_input({"content": "x" * (RAW_INPUT_LIMIT * 2)})
    assert isinstance(big, str) and big.endswith("(truncated)")
    assert len(big) < RAW_INPUT_LIMIT + 20


def test_request_metadata_has_the_contracts_keys() -> None:
    meta = request_metadata(ToolCallInfo("c1", "Run tests", "execute", {"cmd": "make"}), ALL)
    assert meta["status"] == "pending"
    assert meta["tool_call"] == {
        "tool_call_id": "c1",
        "title": "Run tests",
        "kind": "execute",
        "raw_input": {"cmd": "make"},
    }
    assert meta["options"][0] == {"option_id": "a1", "name": "Allow", "kind": "allow_once"}
    json.dumps(meta)  # stored as JSON


def test_a_row_with_an_unknown_status_reads_as_pending() -> None:
    odd = row("m1", type=MessageType.PERMISSION_REQUEST, status="half-decided")
    assert status_of(odd) is PermissionStatus.PENDING
    assert status_of(row("m2", type=MessageType.PERMISSION_REQUEST)) is PermissionStatus.PENDING


def test_the_metadata_of_a_decided_request_carries_the_decision_and_when() -> None:
    decision = decision_of(ALL[0], "user")
    meta = request_metadata(
        ToolCallInfo("c1", "Edit", "edit", None),
        ALL,
        status=PermissionStatus.APPROVED,
        decision=decision,
        decided_at="2026-05-01T09:00:00+00:00",
    )
    assert meta["status"] == "approved" and meta["decided_by"] == "user"
    assert meta["decision"] == decision and meta["decided_at"] == "2026-05-01T09:00:00+00:00"
    assert "raw_input" not in meta["tool_call"]


def test_an_input_that_is_not_json_is_stored_as_its_bounded_repr() -> None:
    class Odd:
        def __repr__(self) -> str:
            return "Odd(" + "x" * (RAW_INPUT_LIMIT * 2) + ")"

    stored = bounded_input({"value": Odd()})
    assert isinstance(stored, str) and stored.startswith("{'value': Odd(xxx")
    assert len(stored) == RAW_INPUT_LIMIT


def test_the_view_of_a_pending_request_has_no_decision() -> None:
    meta = request_metadata(ToolCallInfo("c1", "Edit", "edit", {"path": "a"}), ALL)
    pending = row("m1", type=MessageType.PERMISSION_REQUEST, content="Edit", **meta)
    view = permission_view(pending)
    assert view["message_id"] == "m1" and view["state"] == "pending"
    assert view["decision"] is None and view["tool_call"]["kind"] == "edit"
