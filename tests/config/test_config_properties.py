"""Any config file with one value made wrong is refused with one line that names the file, or
loads: never a traceback. (`clarion serve` turns the ValueError into exit status 2.)"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clarion.config import Settings
from tests.config.test_config_document import EVERY_PART

VALID: dict[str, Any] = tomllib.loads(EVERY_PART)
ENV = {"SLACK_BOT": "xoxb-1", "SLACK_SIGNING": "sig"}


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        children: list[tuple[Any, Any]] = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node))
    else:
        return []
    found: list[tuple[Any, ...]] = []
    for key, value in children:
        found.append((*prefix, key))
        found += _paths(value, (*prefix, key))
    return found


PATHS = _paths(VALID)


def _string(text: str) -> str:
    # JSON's string escapes are TOML's, but for DEL, which TOML wants escaped too.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml(value: Any) -> str:
    """A TOML value, written inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_string(k)} = {_toml(v)}" for k, v in value.items()) + "}"


# Text a TOML file can hold (no lone surrogates).
TEXT = st.characters(codec="utf-8")

WRONG = st.one_of(
    st.sampled_from([0, -1, 3, True, "", " ", "rel", "/abs", "1K", "0s", "ftp://x", 1.5]),
    st.sampled_from([[], [3], ["x"], ["role:nobody"], {}, {"q": 1}, {"role": 3}]),
    st.integers(),
    st.text(TEXT, max_size=6),
    st.lists(st.one_of(st.integers(), st.text(TEXT, max_size=3)), max_size=2),
    st.dictionaries(st.text(TEXT, min_size=1, max_size=3), st.integers(), max_size=2),
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(PATHS), wrong=WRONG, drop=st.booleans())
def test_one_wrong_value_is_refused_on_one_line_naming_the_file_or_loads(
    tmp_path: Path, path: tuple[Any, ...], wrong: Any, drop: bool
) -> None:
    data = copy.deepcopy(VALID)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = wrong
    config = tmp_path / "clarion.toml"
    config.write_text("".join(f"{_string(k)} = {_toml(v)}\n" for k, v in data.items()))
    try:
        Settings.load(config_file=str(config), env={"CLARION_HOME": str(tmp_path), **ENV})
    except ValueError as refused:
        message = str(refused)
        assert message.startswith(f"{config}: "), message
        assert "\n" not in message
