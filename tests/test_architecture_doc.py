"""docs/architecture.md's module list matches the tree: every module and package under
src/clarion is named in the section of its package, and nothing named there is missing."""

from __future__ import annotations

import re
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "clarion"
# A top-level entry of the tree: two spaces, then a name (a package ends in "/").
_TOP = re.compile(r"^  (\S[^ ]*)")
_NAMES = re.compile(r"[\w*]+\.py|[\w]+/")


def _tree_block() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text.split("```\nsrc/clarion/\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def _sections() -> dict[str, set[str]]:
    """package ("" for top level) -> the names its section mentions."""
    sections: dict[str, set[str]] = {"": set()}
    current = ""
    for line in _tree_block():
        top = _TOP.match(line)
        names = set(_NAMES.findall(line))
        if top:
            # The entry's own names come before its description ("__main__.py, cli/", "demo/").
            entry = line.split("  ")[1] if "  " in line.strip() else line
            own = set(_NAMES.findall(entry))
            packages = [n.rstrip("/") for n in own if n.endswith("/")]
            current = packages[0] if packages else ""
            sections[""].update(own)
        sections.setdefault(current, set()).update(names)
    return sections


def _covered(name: str, mentioned: set[str]) -> bool:
    return any(fnmatch(name, pattern) for pattern in mentioned)


def test_every_module_is_named_under_its_package() -> None:
    sections = _sections()
    missing = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if path.name == "__init__.py" or "__pycache__" in rel.parts:
            continue
        if len(rel.parts) == 1:
            if not _covered(rel.name, sections[""]):
                missing.append(str(rel))
            continue
        package = rel.parts[0]
        if package not in sections:
            missing.append(f"{package}/ (the package)")
            continue
        if len(rel.parts) == 2:
            # A package listed in one line (domain/ is listed module by module; web/ has none).
            if not _covered(rel.name, sections[package]):
                missing.append(str(rel))
        elif f"{rel.parts[1]}/" not in sections[package] and not _covered(
            rel.name, sections[package]
        ):
            missing.append(str(rel))
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_module_named_exists() -> None:
    sections = _sections()
    ghosts = []
    for package, names in sections.items():
        if not package:
            continue
        base = SRC / package
        for name in names:
            if name.endswith("/") or "*" in name or name == "__main__.py":
                continue
            if not list(base.rglob(name)) and not (SRC / name).exists():
                ghosts.append(f"{package}/{name}")
    assert not ghosts, f"docs/architecture.md names modules that do not exist: {ghosts}"
