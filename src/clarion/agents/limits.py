"""`pids_max` and `memory_max`: each agent with limits runs in a control group of its own, made
under the server's, so that a fork bomb or a runaway allocation stops at the agent.

cgroup v2 is used when the unified hierarchy has the `pids` and `memory` controllers and the
server may give them to a child group; otherwise the v1 `pids` and `memory` hierarchies when
both are mounted and writable (hybrid machines). When neither works, `limits_problem` says
why and `clarion serve` refuses a profile that sets a limit: a limit is never silently ignored.
The agent joins its group before it runs (a shell writes its own pid, then execs the agent),
so everything it starts is counted from the first fork. Imported by `clarion.agents.process`
and by `clarion serve`'s start checks.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ROOT = Path("/sys/fs/cgroup")
# Under the server's own group: `clarion-agents/<server pid>/<agent>`, so that servers sharing a
# machine never remove each other's groups.
GROUP = "clarion-agents"
# `sh -c` joins every listed cgroup.procs, then becomes the agent: JOIN N FILE... COMMAND...
JOIN = (
    "sh",
    "-c",
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
    'n=$((n-1)); done; exec "$@"',
    "clarion-agent-limits",
)


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where agents' groups are made, per controller: v2 has one folder for both."""

    version: int
    pids: Path
    memory: Path


@dataclass(frozen=True, slots=True)
class AgentGroup:
    folders: tuple[Path, ...]

    def prefix(self) -> tuple[str, ...]:
        """What goes before the agent's command so that it starts inside this group."""
        files = [str(f / "cgroup.procs") for f in self.folders]
        return (*JOIN, str(len(files)), *files)

    def try_release(self) -> bool:
        """Remove what can be removed now; whether all of it is gone."""
        for folder in self.folders:
            with contextlib.suppress(FileNotFoundError, OSError):
                folder.rmdir()
        return not any(f.exists() for f in self.folders)

    def release(self) -> None:
        """Remove the group once its processes are gone (an empty group is a folder)."""
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                logger.warning("agent cgroup %s left behind: %s", folder, exc)


def _own_paths() -> dict[str, str]:
    """The server's group per controller (`""` is the v2 one), from /proc/self/cgroup."""
    found = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path.lstrip("/")
    return found


def _hierarchy() -> Hierarchy:
    """Where agent groups go, or OSError saying why none can be made."""
    own = _own_paths()
    unified = ROOT / "cgroup.controllers"
    if unified.exists() and {"pids", "memory"} <= set(unified.read_text().split()):
        top = ROOT / own.get("", "") / GROUP
        base = top / str(os.getpid())
        base.mkdir(parents=True, exist_ok=True)
        # Controllers reach a child only through its parent's subtree_control; the server's
        # own group may hold processes, so agents' groups sit in a folder of their own.
        for parent in (top.parent, top, base):
            (parent / "cgroup.subtree_control").write_text("+pids +memory")
        return Hierarchy(2, base, base)
    folders = {}
    for name in ("pids", "memory"):
        mount = ROOT / name
        if not (mount / "cgroup.procs").exists() or name not in own:
            raise OSError(
                f"no cgroup v2 with the pids and memory controllers, and no cgroup v1 {name} "
                f"hierarchy at {mount}"
            )
        folders[name] = mount / own[name] / GROUP / str(os.getpid())
        folders[name].mkdir(parents=True, exist_ok=True)
    return Hierarchy(1, folders["pids"], folders["memory"])


@functools.cache
def hierarchy() -> Hierarchy | str:
    """The hierarchy, found once per process; a string says why there is none."""
    try:
        found = _hierarchy()
        _sweep(found)
        probe = open_group(found, pids_max=64, memory_max=64 << 20)
        probe.release()
    except OSError as exc:
        return f"cannot limit agents here: {exc}"
    return found


def limits_problem() -> str | None:
    found = hierarchy()
    return found if isinstance(found, str) else None


def open_group(found: Hierarchy, *, pids_max: int | None, memory_max: int | None) -> AgentGroup:
    """A new group with these limits; OSError when it cannot be made."""
    name = uuid.uuid4().hex[:16]
    if found.version == 2:
        folder = found.pids / name
        folder.mkdir()
        _set(folder, "pids.max", pids_max)
        _set(folder, "memory.max", memory_max)
        with contextlib.suppress(OSError):  # no swap configured: no file
            _set(folder, "memory.swap.max", 0 if memory_max else None)
        return AgentGroup((folder,))
    pids, memory = found.pids / name, found.memory / name
    pids.mkdir()
    memory.mkdir()
    _set(pids, "pids.max", pids_max)
    _set(memory, "memory.limit_in_bytes", memory_max)
    with contextlib.suppress(OSError):  # without swap accounting there is no such file
        _set(memory, "memory.memsw.limit_in_bytes", memory_max)
    return AgentGroup((pids, memory))


def _set(folder: Path, key: str, value: int | None) -> None:
    if value is not None:
        (folder / key).write_text(str(value))


def _sweep(found: Hierarchy) -> None:
    """Groups of servers that are gone (killed with SIGKILL) left behind; only empty ones can
    be removed, and are."""
    for base in {found.pids, found.memory}:
        for server in base.parent.iterdir():
            if not server.is_dir() or not server.name.isdigit() or server == base:
                continue
            if Path(f"/proc/{server.name}").exists():
                continue
            for folder in [*server.iterdir(), server]:
                if folder.is_dir():
                    with contextlib.suppress(OSError):
                        folder.rmdir()


def agent_group(pids_max: int | None, memory_max: int | None) -> AgentGroup:
    found = hierarchy()
    if isinstance(found, str):
        raise OSError(found)
    return open_group(found, pids_max=pids_max, memory_max=memory_max)
