"""Who may write a bundle's lifecycle: the keys are spelled only in the domain and the store,
written only by the transition table (domain/lifecycle.py), every bundle change a service
asks of the store names a transition of that table, and the store applies only transitions
it names or is given, through its own writers of a row's metadata (store/bundle_rows.py)."""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy.sql.dml import ValuesBase

from clarion.domain import lifecycle
from clarion.domain.models import DISPATCH_KEYS, MetaKey
from clarion.store.db.schema import task_session_messages

SRC = Path(__file__).resolve().parents[2] / "src" / "clarion"
TABLE = Path("domain") / "lifecycle.py"
# The store's guarded calls that change a bundle, and which argument names the transition.
TRANSITION_ARGUMENT = {
    "transition_bundle": 1,
    "transition_session_bundles": 1,
    "transition_all_bundles": 0,
    "confirm_delivery": 2,
    "claim_response": 1,
    "publish_successor": 1,
}
# The store's own writers of a row's lifecycle: which argument is the transition they apply.
STORE_APPLIES = {"rewrite": 2, "rewrite_all": 2, "change_in_sql": 0}
# The store modules whose statements may write a message row's metadata: the transitions'
# writers, a new row's insert (its keys come from the domain: ASK) and permission requests
# (their own keys, never a bundle's).
METADATA_WRITERS = {
    Path("store") / "bundle_rows.py",
    Path("store") / "messages.py",
    Path("store") / "permission_rows.py",
}
# Services' calls that pass a transition on, by keyword: `Resolver.respond(..., claim=...)`.
TRANSITION_KEYWORD = {"respond": "claim"}


@functools.cache
def _modules() -> tuple[tuple[Path, ast.AST], ...]:
    """Every module's syntax tree, parsed once for all the tests here (none changes a tree)."""
    return tuple(
        (path.relative_to(SRC), ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(SRC.rglob("*.py"))
    )


@functools.cache
def _module(path: Path) -> ModuleType | None:
    """The imported module at `path` (relative to the package), to resolve its global names."""
    if path.name == "__main__.py":
        return None
    parts = [*path.parts[:-1], path.stem] if path.stem != "__init__" else [*path.parts[:-1]]
    return importlib.import_module(".".join(["clarion", *parts]))


def _global(path: Path, node: ast.AST) -> Any:
    """The value a bare name has at module level (None when it is not a module global)."""
    module = _module(path)
    if module is None or not isinstance(node, ast.Name):
        return None
    return getattr(module, node.id, None)


def _lifecycle_key(path: Path, node: ast.AST, lifecycle_attrs: set[str]) -> str | None:
    """The lifecycle key `node` spells: `MetaKey.X`; in the store also the key as a string, or
    a module global holding it (an alias such as `INTENT = MetaKey.RESPONSE_DELIVERY_PENDING`).
    Elsewhere the same words are the wire's keys (`"status"`, `"response"`)."""
    if (attr := _meta_key(node)) is not None:
        return f"MetaKey.{attr}" if attr in lifecycle_attrs else None
    if path.parts[0] != "store":
        return None
    if isinstance(node, ast.Constant) and node.value in lifecycle.LIFECYCLE_KEYS:
        return repr(node.value)
    value = _global(path, node)
    if isinstance(value, str) and value in lifecycle.LIFECYCLE_KEYS:
        return f"{getattr(node, 'id', '')} = {value!r}"
    return None


def _meta_key(node: ast.AST) -> str | None:
    """X when `node` is `MetaKey.X`."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "MetaKey"
    ):
        return node.attr
    return None


def _lifecycle_attrs() -> set[str]:
    return {
        name
        for name, value in vars(MetaKey).items()
        if isinstance(value, str) and value in lifecycle.LIFECYCLE_KEYS
    }


def _written_keys(tree: ast.AST) -> Iterator[ast.expr]:
    """The keys a module writes on a mapping: a dict literal's keys, an assignment's or a
    deletion's subscript, `pop` and `setdefault`'s first argument, and the key a SQL update
    sets in place (`with_flag`'s second argument)."""
    logged = {
        id(k.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for k in node.keywords
        if k.arg == "extra"  # a log line's fields, not a row's
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and id(node) not in logged:
            yield from (k for k in node.keys if k is not None)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            found = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            yield from (t.slice for t in found if isinstance(t, ast.Subscript))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"pop", "setdefault"}
            and node.args
        ):
            yield node.args[0]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"with_flag", "json_with_true"}
            and len(node.args) > 1
        ):
            yield node.args[1]


def test_no_module_outside_the_domain_and_the_store_names_a_metadata_key() -> None:
    outside = [
        f"{path}:{getattr(node, 'lineno', 0)} MetaKey.{attr}"
        for path, tree in _modules()
        if path.parts[0] not in {"domain", "store"}
        for node in ast.walk(tree)
        if (attr := _meta_key(node)) is not None
    ]
    assert outside == []


# A turn row's own keys: how it ended and the detached resume's dispatch markers.
TURN_KEYS = frozenset({MetaKey.LIFECYCLE_ONLY, MetaKey.INTERRUPTED, *DISPATCH_KEYS})


def test_no_module_outside_the_domain_and_the_store_writes_a_turn_key_as_a_string() -> None:
    # Spelled as a plain string ({"interrupted": True}) a key escapes the test above; a
    # service names the outcome instead (domain/turn_outcomes.py).
    outside = [
        f"{path}:{getattr(key, 'lineno', 0)} {key.value!r}"
        for path, tree in _modules()
        if path.parts[0] not in {"domain", "store"}
        for key in _written_keys(tree)
        if isinstance(key, ast.Constant) and key.value in TURN_KEYS
    ]
    assert outside == []


def test_only_the_transition_table_writes_a_lifecycle_key() -> None:
    lifecycle_attrs = _lifecycle_attrs()
    direct = [
        f"{path}:{key.lineno} {spelled}"
        for path, tree in _modules()
        if path != TABLE
        for key in _written_keys(tree)
        if (spelled := _lifecycle_key(path, key, lifecycle_attrs)) is not None
    ]
    assert direct == []


def test_no_module_outside_the_table_makes_a_transition() -> None:
    made = [
        f"{path}:{node.lineno}"
        for path, tree in _modules()
        if path != TABLE
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "Transition"
    ]
    assert made == []
    declared = [v for v in vars(lifecycle).values() if isinstance(v, lifecycle.Transition)]
    assert set(declared) == set(lifecycle.TRANSITIONS)


def _given_transitions(tree: ast.AST) -> dict[ast.AST, set[str]]:
    """Each node inside a function, with the names of the `Transition`-typed parameters of the
    functions around it."""
    given: dict[ast.AST, set[str]] = {}

    def visit(node: ast.AST, names: frozenset[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = names | {arg.arg for arg, _ in _transition_parameters(node)}
        given[node] = set(names)
        for child in ast.iter_child_nodes(node):
            visit(child, names)

    visit(tree, frozenset())
    return given


def _applied(call: ast.Call) -> ast.expr | None:
    """The transition a store call applies: the argument of its writers, or `T` of
    `T.change(...)`."""
    if isinstance(call.func, ast.Name) and call.func.id in STORE_APPLIES:
        index = STORE_APPLIES[call.func.id]
        return call.args[index] if len(call.args) > index else None
    if isinstance(call.func, ast.Attribute) and call.func.attr == "change":
        return call.func.value
    return None


def test_the_store_applies_only_transitions_it_names_or_is_given() -> None:
    # What a bundle becomes is decided by the domain or the caller: the store applies a
    # transition named from the table, or the `Transition` its own caller handed it, never
    # one it picked from a variable.
    unnamed: list[str] = []
    seen: set[str] = set()
    for path, tree in _modules():
        if path.parts[0] != "store":
            continue
        imported = _imported_from_the_table(tree)
        given = _given_transitions(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            applied = _applied(node)
            if applied is None and not (
                isinstance(node.func, ast.Name) and node.func.id in STORE_APPLIES
            ):
                continue
            seen.add(node.func.id if isinstance(node.func, ast.Name) else "change")
            if applied is not None and (
                _names_a_transition(applied, imported)
                or (isinstance(applied, ast.Name) and applied.id in given[node])
            ):
                continue
            unnamed.append(f"{path}:{node.lineno}")
    assert unnamed == []
    assert seen == {*STORE_APPLIES, "change"}, "a writer is no longer used: update this test"


def _statement_table(path: Path, values: ast.Call) -> Any:
    """The table of the INSERT or UPDATE that `.values(...)` continues."""
    root: ast.expr = values.func.value if isinstance(values.func, ast.Attribute) else values
    while isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
        root = root.func.value
    if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.args:
        if root.func.id in {"update", "insert"}:
            return _global(path, root.args[0])
        if root.func.id == "hot":  # a prebuilt statement marked for the fast path
            root = root.args[0]
    statement = _global(path, root)
    return statement.table if isinstance(statement, ValuesBase) else None


def test_only_the_stores_metadata_writers_write_a_message_rows_metadata() -> None:
    # A statement of its own elsewhere could write any change; the writers apply a
    # transition's (`rewrite`, `rewrite_all`), or are a SQL form of one (`change_in_sql`).
    elsewhere: list[str] = []
    for path, tree in _modules():
        if path.parts[0] != "store" or path in METADATA_WRITERS:
            continue
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "values"
            ):
                continue
            written = next((k.value for k in node.keywords if k.arg == "metadata"), None)
            if written is None or _statement_table(path, node) is not task_session_messages:
                continue
            if (
                isinstance(written, ast.Call)
                and isinstance(written.func, ast.Name)
                and written.func.id == "change_in_sql"
            ):
                continue  # its transition is checked above
            elsewhere.append(f"{path}:{node.lineno}")
    assert elsewhere == []


def _imported_from_the_table(tree: ast.AST) -> set[str]:
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "clarion.domain.lifecycle"
        for alias in node.names
    }


def _transition_calls(tree: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in TRANSITION_ARGUMENT
        ):
            yield node.func.attr, node


def _transition_parameters(tree: ast.AST) -> Iterator[tuple[ast.arg, ast.expr | None]]:
    """Each parameter typed `Transition`, with its default (None: it has none)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
            pairs = [
                *zip(positional, [*defaults, *args.defaults], strict=True),
                *zip(args.kwonlyargs, args.kw_defaults, strict=True),
            ]
            for arg, default in pairs:
                if isinstance(arg.annotation, ast.Name) and arg.annotation.id == "Transition":
                    yield arg, default


def _names_a_transition(node: ast.expr, imported: set[str]) -> bool:
    """`node` is a transition of the table, imported by that name from domain/lifecycle.py."""
    return (
        isinstance(node, ast.Name)
        and node.id in imported
        and isinstance(getattr(lifecycle, node.id, None), lifecycle.Transition)
        and getattr(lifecycle, node.id) in lifecycle.TRANSITIONS
    )


def test_no_guarded_call_of_the_store_or_its_ports_defaults_its_transition() -> None:
    # A default would let a caller change a bundle without saying how.
    defaulted = [
        f"{path}:{node.lineno} {node.name}({arg.arg}=)"
        for path, tree in _modules()
        if path.parts[0] in {"store", "ports"}
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name in TRANSITION_ARGUMENT
        for arg, default in _transition_parameters(node)
        if default is not None
    ]
    assert defaulted == []


def test_every_bundle_change_a_service_asks_of_the_store_names_a_transition_of_the_table() -> None:
    seen: set[str] = set()
    unnamed: list[str] = []
    for path, tree in _modules():
        if path.parts[0] == "store":
            continue
        imported = _imported_from_the_table(tree)
        # A service may pass on a transition it was given, as a parameter typed `Transition`
        # whose default, if any, names one of the table's.
        forwarded = set()
        for arg, default in _transition_parameters(tree):
            forwarded.add(arg.arg)
            if default is not None and not _names_a_transition(default, imported):
                unnamed.append(f"{path}:{arg.lineno} default of {arg.arg}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                wanted = TRANSITION_KEYWORD.get(node.func.attr, "")
                for keyword in node.keywords:
                    if keyword.arg == wanted and not _names_a_transition(keyword.value, imported):
                        unnamed.append(f"{path}:{node.lineno} {node.func.attr}({wanted}=)")
        for call_name, call in _transition_calls(tree):
            seen.add(call_name)
            index = TRANSITION_ARGUMENT[call_name]
            given = call.args[index] if len(call.args) > index else None
            if isinstance(given, ast.Name) and given.id in forwarded:
                continue
            if given is None or not _names_a_transition(given, imported):
                unnamed.append(f"{path}:{call.lineno} {call_name}")
    assert unnamed == []
    assert seen == set(TRANSITION_ARGUMENT), "a guarded call is no longer used: update this test"
