"""The truthy rule for metadata flags mirrors the SQL cast-to-text test."""

from __future__ import annotations

import pytest

from clarion.domain.flags import flag, is_truthy


@pytest.mark.parametrize("value", [True, "true", "1", 1])
def test_values_that_read_as_text_true_or_1_are_set(value: object) -> None:
    assert is_truthy(value) is True


@pytest.mark.parametrize(
    "value",
    [
        False,
        0,
        2,
        -1,
        1.0,
        0.0,
        "",
        "false",
        "0",
        "yes",
        "TRUE",
        "True",
        " true",
        "true ",
        "01",
        None,
        [],
        [True],
        {},
        {"a": 1},
        b"true",
    ],
)
def test_every_other_value_is_unset(value: object) -> None:
    assert is_truthy(value) is False


def test_flag_reads_the_key_with_the_same_rule() -> None:
    meta = {"a": "1", "b": "TRUE", "c": True, "d": 0}
    assert [flag(meta, k) for k in "abcd"] == [True, False, True, False]


def test_flag_is_unset_when_the_key_or_the_metadata_is_missing() -> None:
    assert flag({"other": True}, "a") is False
    assert flag({}, "a") is False
    assert flag(None, "a") is False
