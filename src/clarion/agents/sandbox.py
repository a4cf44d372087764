"""The agent sandbox: whether bubblewrap works here, which mode a profile really runs under, and
the bubblewrap command line that runs an agent with only what its task needs (docs/security.md).

Imported by `clarion.agents.process` (which starts what `wrap` returns), by the runtime and
the checks (for the mode) and by `clarion serve` (which refuses a `bwrap` profile it cannot
honour). The command line is built from the file system as it is when the agent starts: which
folder is a git worktree, where the agent's program lives.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clarion.config import AgentProfile
from clarion.config.sandbox import SandboxConfig

logger = logging.getLogger(__name__)

Effective = Literal["bwrap", "none"]
PROBE_TIMEOUT_S = 10.0
# The namespaces an agent gets of its own. Not the network: agents reach their model's API and
# Clarion's MCP endpoint over the host's. Not the user: as root bubblewrap needs none (and drops
# every capability of the agent); without root it makes one itself.
UNSHARE = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")
BASE = ("--die-with-parent", "--new-session", *UNSHARE)
# A home on the private /tmp, for a profile built in code without one.
SCRATCH_HOME = "/tmp/agent-home"


class SandboxUnavailable(OSError):
    """A profile asks for bubblewrap and it does not work here."""


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot run an agent here, or None when it can: it is run once (per
    process) with the namespaces and mounts an agent gets, `true` as the agent."""
    program = shutil.which("bwrap")
    if program is None:
        return "bwrap (bubblewrap) is not installed"
    probe = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    probe += ["--tmpfs", "/tmp", *BASE, "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap does not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[-300:]
        hint = "" if os.geteuid() == 0 else " (unprivileged user namespaces may be disabled)"
        return f"bwrap fails (exit {done.returncode}): {said or 'no message'}{hint}"
    return None


def effective_mode(config: SandboxConfig) -> Effective:
    """What the profile runs under: `none`, or `bwrap` (also for `auto` when it works). A
    `bwrap` profile raises SandboxUnavailable when bubblewrap does not work."""
    if config.mode == "none":
        return "none"
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if config.mode == "bwrap":
        raise SandboxUnavailable(problem)
    return "none"


@dataclass(frozen=True, slots=True)
class Wrapped:
    """How to start a sandboxed agent: `argv` with `args` (bubblewrap's options, NUL-separated)
    on the descriptor `argv` names, so that the environment they set is not on a command line
    every local user can read in /proc."""

    argv: tuple[str, ...]
    args: bytes


def wrap(
    command: Sequence[str], env: Mapping[str, str], cwd: str, config: SandboxConfig, fd: int
) -> Wrapped:
    """The bubblewrap command running `command` in `cwd` with exactly `env` (its HOME the
    agent's own), seeing only what `config` allows; its options will be read from `fd`."""
    home = config.home or SCRATCH_HOME
    if config.home:
        os.makedirs(home, mode=0o700, exist_ok=True)
    options = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *BASE]
    for mount in mounts(command, env, cwd, config):
        options += mount
    if not config.home:
        options += ["--dir", SCRATCH_HOME]
    options.append("--clearenv")
    for key, value in {**env, "HOME": home}.items():
        options += ["--setenv", key, value]
    options += ["--chdir", cwd]
    program = shutil.which("bwrap") or "bwrap"
    return Wrapped(
        argv=(program, "--args", str(fd), "--", *command),
        args=b"".join(o.encode() + b"\0" for o in options),
    )


# What each kind of mount does, in the order the same path is settled (the last one wins).
_ORDER = {
    "scaffold": -1,
    "program": 0,
    "hide": 1,
    "write": 2,
    "read": 3,
    "extra-write": 4,
    "guard": 5,
    "file": 6,
}


def mounts(
    command: Sequence[str], env: Mapping[str, str], cwd: str, config: SandboxConfig
) -> list[list[str]]:
    """bubblewrap's mount options, in the order it must apply them. A mount covers what was
    mounted under its path before it, so parents go first (shallower paths first), and for one
    path the stronger rule goes last: hiding the database and config files beats everything."""
    wanted: list[tuple[str, str, str]] = [("hide", "--tmpfs", "/tmp")]
    wanted += [("program", "--ro-bind", p) for p in program_paths(command, env, cwd)]
    wanted += [("hide", "--tmpfs", p) for p in config.hidden.directories() if os.path.isdir(p)]
    wanted.append(("write", "--bind", os.path.realpath(cwd)))
    if config.home:
        wanted.append(("write", "--bind", config.home))
    git = git_dirs(cwd)
    if git is not None:
        wanted.append(("write", "--bind", git))
        # Hooks and config run on the host the next time anyone uses the repository there.
        wanted += [("guard", "--ro-bind", os.path.join(git, n)) for n in ("hooks", "config")]
    wanted += [("write", "--bind", p) for p in _coverage_data(env)]
    wanted += [("read", "--ro-bind", p) for p in config.extra_read]
    wanted += [("extra-write", "--bind", p) for p in config.extra_write]
    # An empty file in place of each hidden one: /dev/null, read-only.
    wanted += [("file", "--ro-bind", p) for p in config.hidden.files()]
    present = [(kind, op, p) for kind, op, p in wanted if p == "/tmp" or os.path.exists(p)]
    present += _scaffolds([p for _, _, p in present])
    present.sort(key=lambda m: (_depth(m[2]), _ORDER[m[0]]))
    ordered: list[tuple[str, str, str]] = []
    for kind, op, path in present:
        covering = _covering(path, ordered)
        # A file under a hidden folder is gone already (binding over it would show its name);
        # a folder to show read-only that is shown read-only already needs no mount of its own.
        if kind == "file" and covering == "--tmpfs":
            continue
        if kind in ("program", "read") and covering == "--ro-bind":
            continue
        ordered.append((kind, op, path))
    options = [_option(kind, op, p) for kind, op, p in ordered]
    # Last, every tmpfs but /tmp becomes read-only (the mounts on it stay as they are): a
    # write there fails instead of "succeeding" into a tmpfs that no one will ever see.
    options += [["--remount-ro", p] for _, op, p in ordered if op == "--tmpfs" and p != "/tmp"]
    return options


def _scaffolds(paths: list[str]) -> list[tuple[str, str, str]]:
    """A tmpfs at each top folder of /tmp that holds something mounted deeper (the folders
    bubblewrap makes to mount on), made read-only at the end: the agent's /tmp stays its own
    and writable, but a write beside its working directory fails as it does outside /tmp."""
    tops = {"/tmp/" + Path(p).parts[2] for p in paths if p.startswith("/tmp/")}
    return [("scaffold", "--tmpfs", top) for top in sorted(tops - set(paths))]


def _covering(path: str, before: list[tuple[str, str, str]]) -> str:
    """The option of the last mount so far over `path` or a folder above it (the system's
    read-only bind of `/` when there is none)."""
    above = [(kind, op) for kind, op, p in before if path == p or path.startswith(p + "/")]
    kind, op = above[-1] if above else ("program", "--ro-bind")
    return "--file" if kind == "file" else op


def _coverage_data(env: Mapping[str, str]) -> list[str]:
    """The folder coverage measurement writes its data to, when the environment hands its
    configuration down (only under `make test`): a sandboxed agent is measured too."""
    raw = env.get("COVERAGE_PROCESS_CONFIG", "").removeprefix(":data:")
    try:
        data_file = json.loads(base64.b64decode(raw)).get("data_file") if raw else None
    except (ValueError, AttributeError):
        return []
    return [os.path.dirname(os.path.realpath(data_file))] if isinstance(data_file, str) else []


def _option(kind: str, op: str, path: str) -> list[str]:
    if op == "--tmpfs":
        return [op, path]
    return [op, "/dev/null" if kind == "file" else path, path]


def _depth(path: str) -> int:
    return len(Path(path).parts)


def program_paths(command: Sequence[str], env: Mapping[str, str], cwd: str) -> list[str]:
    """What the agent's program needs to run, wherever it is installed: the folder of its
    executable and of each file its command names (a Node package's folder, a virtualenv), and
    for a Python like Clarion's own, its environment and where it imports from."""
    found: list[str] = []
    program = shutil.which(command[0], path=env.get("PATH")) if command else None
    candidates = [program] if program else []
    candidates += [a for a in command[1:] if "/" in a]
    for candidate in candidates:
        path = os.path.realpath(os.path.join(cwd, candidate))
        if os.path.exists(path):
            found.append(_program_root(path))
        if program and candidate == program:
            found.append(os.path.dirname(os.path.abspath(program)))  # a link's own folder
    if program and os.path.realpath(program) == os.path.realpath(sys.executable):
        found += [sys.prefix, sys.base_prefix, *(p for p in sys.path if os.path.isdir(p))]
    return sorted({os.path.realpath(p) for p in found})


def _program_root(path: str) -> str:
    parts = Path(path).parts
    if "node_modules" in parts:  # the project that installed the package: it has its deps
        return str(Path(*parts[: parts.index("node_modules")]))
    folder = Path(path) if os.path.isdir(path) else Path(path).parent
    for above in (folder, *list(folder.parents)[:3]):
        if (above / "pyvenv.cfg").exists() or (above / "package.json").exists():
            return str(above)
    return str(folder)


def git_dirs(cwd: str) -> str | None:
    """The git directory a commit in `cwd` writes to, when it is not inside `cwd`: a worktree's
    repository (its `.git` file names `<repo>/.git/worktrees/<name>`, whose `commondir` leads
    back to `<repo>/.git`), or the `.git` of a repository `cwd` is a subfolder of."""
    here = Path(os.path.realpath(cwd))
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return None if folder == here else str(dot_git)
        if dot_git.is_file():
            return _common_dir(folder, dot_git)
    return None


def _common_dir(folder: Path, dot_git: Path) -> str | None:
    try:
        line = dot_git.read_text().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = (folder / line.removeprefix("gitdir:").strip()).resolve()
    try:
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    except OSError:
        common = gitdir
    return str(common) if common.is_dir() else None


def check_profiles(
    profiles: Mapping[str, AgentProfile], config_file: str | None
) -> dict[str, Effective]:
    """What each profile runs under, checked as `clarion serve` starts: ValueError naming the
    profile when one asks for bubblewrap, or sets a limit, that this machine cannot honour; a
    warning for each `auto` profile that runs unsandboxed."""
    from clarion.agents.limits import limits_problem

    where = config_file or "the config file"
    modes: dict[str, Effective] = {}
    for name, profile in profiles.items():
        try:
            modes[name] = effective_mode(profile.sandbox)
        except SandboxUnavailable as exc:
            raise ValueError(
                f'agent profile {name!r} has sandbox = "bwrap" ({where}: agents.{name}.sandbox) '
                f"but bubblewrap cannot run it here: {exc}"
            ) from None
        if profile.sandbox.mode == "auto" and modes[name] == "none":
            logger.warning(
                'agent profile %r runs without a sandbox (sandbox = "auto"): %s',
                name,
                bwrap_problem(),
                extra={"profile": name},
            )
        if profile.sandbox.limited and (problem := limits_problem()) is not None:
            key = "pids_max" if profile.sandbox.pids_max is not None else "memory_max"
            raise ValueError(
                f"agent profile {name!r} sets {key} ({where}: agents.{name}.{key}) but {problem}"
            )
    return modes


def sandbox_modes(profiles: Mapping[str, AgentProfile]) -> Callable[[str], Effective]:
    """A profile's mode as the session read shows it: what its agents run under, or would
    (a `bwrap` profile whose bubblewrap fails starts no agent at all, never an unsandboxed
    one). A profile no longer configured reads as the default would run."""
    modes = {name: _mode_shown(p.sandbox) for name, p in profiles.items()}
    default = _mode_shown(SandboxConfig())
    return lambda profile: modes.get(profile, default)


def _mode_shown(config: SandboxConfig) -> Effective:
    try:
        return effective_mode(config)
    except SandboxUnavailable:
        return "bwrap"
