"""What the built package promises its users and what the suite promises itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import clarion

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_ships_a_py_typed_marker_so_type_checkers_read_its_annotations() -> None:
    # The wheel takes every file under src/clarion (pyproject's wheel target), so the marker
    # beside __init__.py is what lands in site-packages/clarion.
    assert (Path(clarion.__file__).parent / "py.typed").is_file()


def test_an_xfail_that_starts_passing_fails_the_run(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getini("xfail_strict") is True
