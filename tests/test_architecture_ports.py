"""Each service holds the store's object for the one port it needs, never the whole store;
and no class in src/clarion grows past 25 public methods (the store was one object of ~98)."""

from __future__ import annotations

import ast
import inspect
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from clarion.orchestrator.workflow import WorkflowGuard
from clarion.server.app import App
from clarion.store import SqlStore, Stores
from tests.lifecycle.harness import running_lifecycle

SRC = Path(__file__).resolve().parents[1] / "src" / "clarion"
MOST_PUBLIC_METHODS = 25


# ----------------------------------------------------------------------- public methods


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else None
        if isinstance(decorator, ast.Name):
            name = decorator.id
        if name in {"property", "setter", "cached_property"}:
            return True
    return False


def _bound_name(node: ast.stmt) -> str | None:
    """`self.NAME = x.NAME` or `self.NAME = wrap(x.NAME)`: a method bound as an attribute."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target = node.targets[0]
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return None
    if target.value.id != "self" or target.attr.startswith("_"):
        return None
    value = node.value
    if isinstance(value, ast.Call) and value.args:
        value = value.args[0]
    if isinstance(value, ast.Attribute) and value.attr == target.attr:
        return target.attr
    return None


def _own_methods(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in node.body:
        if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not item.name.startswith("_") and not _is_property(item):
            names.add(item.name)
        if item.name == "__init__":
            names.update(n for n in map(_bound_name, ast.walk(item)) if n)  # type: ignore[arg-type]
    return names


def public_methods(source: str) -> dict[str, set[str]]:
    """Each class of a module with its public methods, those it inherits from a class of the
    same module included."""
    tree = ast.parse(source)
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

    def methods(name: str) -> set[str]:
        node = classes[name]
        found = _own_methods(node)
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id != name:
                found |= methods(base.id)
        return found

    return {name: methods(name) for name in classes}


def test_the_count_sees_methods_bound_in_init_and_inherited_ones() -> None:
    source = (
        "class A:\n"
        "    def __init__(self, p):\n"
        "        self.one = shield(p.one)\n"
        "        self.two = p.two\n"
        "        self._hidden = shield(p._hidden)\n"
        "        self.value = 3\n"
        "    async def three(self): ...\n"
        "    @property\n"
        "    def four(self): ...\n"
        "class B(A):\n"
        "    def five(self): ...\n"
    )
    assert public_methods(source) == {
        "A": {"one", "two", "three"},
        "B": {"one", "two", "three", "five"},
    }


def test_no_class_in_src_has_more_than_25_public_methods() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for name, methods in public_methods(path.read_text()).items():
            if len(methods) > MOST_PUBLIC_METHODS:
                offenders.append(f"{path.relative_to(SRC)}:{name} ({len(methods)})")
    assert offenders == [], f"over {MOST_PUBLIC_METHODS} public methods: {offenders}"


# ------------------------------------------------------------------ who holds the store


def _calls(kind: object) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(kind)
        if not name.startswith("_") and callable(member)
    }


def _protocols(annotation: object) -> Iterator[type]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            yield from _protocols(arg)
    elif isinstance(annotation, type) and getattr(annotation, "_is_protocol", False):
        yield annotation


def _declared(holder: object) -> list[type]:
    """The protocols the holder's constructor (or its fields) are typed with."""
    hints: dict[str, Any] = {}
    for source in (type(holder).__init__, type(holder)):
        try:
            hints.update(typing.get_type_hints(source))
        except Exception:
            continue
    return [p for hint in hints.values() for p in _protocols(hint)]


def _walk(root: object, skip: set[int]) -> Iterator[tuple[object, str, object]]:
    """(holder, attribute, value) for every attribute of every object of ours under root."""
    seen: set[int] = set(skip)
    todo = [root]
    while todo:
        holder = todo.pop()
        if id(holder) in seen:
            continue
        seen.add(id(holder))
        try:
            attributes = dict(vars(holder))
        except TypeError:
            attributes = {
                s: getattr(holder, s)
                for s in getattr(type(holder), "__slots__", ())
                if hasattr(holder, s)
            }
        for name, value in attributes.items():
            values = value.values() if isinstance(value, dict) else [value]
            if isinstance(value, list | tuple | set | frozenset):
                values = list(value)
            for item in values:
                yield holder, name, item
                if type(item).__module__.startswith("clarion.") and id(item) not in seen:
                    todo.append(item)


def wide_holders(
    root: object, stores: Stores, allowed: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """Every holder of the whole store, or of a port's object wider than the narrowest one
    covering what the holder is typed to need; and every holder of a port's object looked
    at. `allowed`: "Class.attribute" that may hold the whole (and is not walked)."""
    ports = {id(port): (name, _calls(port)) for name, port in stores.all().items()}
    skip = {id(port) for port in stores.all().values()} | {id(stores)}
    found, checked = [], []
    for holder, attr, value in _walk(root, skip):
        where = f"{type(holder).__name__}.{attr}"
        if where in allowed:
            continue
        if isinstance(value, SqlStore | Stores):
            found.append(f"{where} holds the whole store")
            continue
        if id(value) not in ports:
            continue
        name, calls = ports[id(value)]
        checked.append(where)
        needs = [_calls(p) for p in _declared(holder)]
        fits = [
            min(len(c) for _, c in ports.values() if need <= c) for need in needs if need <= calls
        ]
        if not fits or len(calls) > min(fits):
            found.append(f"{where} holds `{name}` ({len(calls)} calls), more than it needs")
    return found, checked


async def test_no_service_holds_the_whole_store_or_a_wider_port_than_it_needs(
    tmp_path: Path,
) -> None:
    async with running_lifecycle(f"sqlite:///{tmp_path / 'ports.db'}") as life:
        app: App = life.app
        # App keeps every port's object for the server's tests; no service is handed it.
        found, checked = wide_holders(app, app.stores, frozenset({"App.stores"}))
        assert found == []
        # The walk reached the services: the answer path, turns, reads, recovery, cluster.
        assert {"Resolver._store", "TurnAdmission._store", "Reads._store", "App.ownership"} <= set(
            checked
        ), checked
        assert len(checked) >= 20, checked


class _Reader(Protocol):
    async def get_task(self, task_id: str) -> object: ...


class _HoldsTooMuch:
    def __init__(self, store: _Reader) -> None:
        self._store = store


@pytest.mark.parametrize("give", ["turns", "whole"])
async def test_the_check_names_a_service_given_more_than_its_port(
    tmp_path: Path, give: str
) -> None:
    async with running_lifecycle(f"sqlite:///{tmp_path / 'ports.db'}") as life:
        stores = life.app.stores
        given: Any = stores.turns if give == "turns" else stores
        found, _ = wide_holders(_HoldsTooMuch(given), stores)
        assert found and found[0].startswith("_HoldsTooMuch._store holds")
        # The narrowest object that has `get_task` is the lookups' own: no complaint.
        assert wide_holders(_HoldsTooMuch(stores.lookups), stores) == ([], ["_HoldsTooMuch._store"])
        assert wide_holders(WorkflowGuard(stores.turns), stores)[0] == []
