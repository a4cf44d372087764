"""Who may write a bundle's lifecycle: the keys are spelled only in the domain and the store,
written only by the transition table (domain/lifecycle.py), and every bundle change a service
asks of the store names a transition of that table."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from clarion.domain import lifecycle
from clarion.domain.models import MetaKey

SRC = Path(__file__).resolve().parents[2] / "src" / "clarion"
TABLE = Path("domain") / "lifecycle.py"
# The store's guarded calls that change a bundle, and which argument names the transition.
TRANSITION_ARGUMENT = {
    "transition_bundle": 2,
    "transition_session_bundles": 1,
    "transition_all_bundles": 0,
    "confirm_delivery": 2,
    "claim_response": 1,
}
# Services' calls that pass a transition on, by keyword: `Resolver.respond(..., claim=...)`.
TRANSITION_KEYWORD = {"respond": "claim"}


def _modules() -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC), ast.parse(path.read_text(), filename=str(path))


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
    deletion's subscript, `pop` and `setdefault`'s first argument."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
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


def test_no_module_outside_the_domain_and_the_store_names_a_metadata_key() -> None:
    outside = [
        f"{path}:{getattr(node, 'lineno', 0)} MetaKey.{attr}"
        for path, tree in _modules()
        if path.parts[0] not in {"domain", "store"}
        for node in ast.walk(tree)
        if (attr := _meta_key(node)) is not None
    ]
    assert outside == []


def test_only_the_transition_table_writes_a_lifecycle_key() -> None:
    lifecycle_attrs = _lifecycle_attrs()
    direct = [
        f"{path}:{key.lineno} MetaKey.{attr}"
        for path, tree in _modules()
        if path != TABLE
        for key in _written_keys(tree)
        if (attr := _meta_key(key)) in lifecycle_attrs
    ]
    assert direct == []


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
