"""Print branch coverage per package of `clarion` and, with `--check`, fail below the floors.

`make test` runs the suite under `coverage run` (the server, CLI and agent processes the tests
start are measured too, see `[tool.coverage.run]` in pyproject.toml), combines the data files
and runs this. The floors are today's measured figures rounded down a little, so run-to-run
noise (which waits and retries a loaded machine happens to take) does not fail the suite; raise
a floor when a package's coverage rises. `domain` is pure logic and stays at 100%.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import coverage

TOP_LEVEL_NAME = "(top level)"

# Package (a directory under src/clarion, or "(top level)" for the modules directly in it) to
# the lowest acceptable branch coverage, in percent.
# Measured on the full suite (make test, 4 workers, all green but one unrelated test); the
# comment after each floor is that run's figure.
FLOORS: dict[str, float] = {
    TOP_LEVEL_NAME: 91.0,  # 93.0 when the top level held the modules now in config, runtime, server
    "agents": 84.0,  # 86.0 under load, 89.1 idle (agent processes killed mid-write lose data)
    "api": 85.0,  # 87.3 under load, 91.8 idle
    # 93.9 (96.4 before the NATS connection errors named the refusal: paths a refusal alone runs)
    "bus": 93.5,
    "clarification": 88.0,  # 90.2
    "cli": 85.0,  # 87.7
    "client": 91.0,  # 93.8 (its first run as a package: what the CLI and the demo share)
    "config": 95.0,  # 96.3 (its first run as a package, under load)
    "demo": 84.0,  # 87.0
    "domain": 100.0,  # pure rules: in-process tests cover every branch, no subprocess needed
    "mcp": 92.0,  # 93.6 (the SDK's lazy load and its failure paths tested in-process)
    "metrics": 97.0,  # 100.0
    "notifications": 87.0,  # 89.9
    "orchestrator": 86.0,  # 89.0
    "ports": 95.0,  # 100.0 (protocol bodies are excluded, what remains is small)
    "projection": 92.0,  # 94.3 (95.0 in another run)
    "runtime": 95.0,  # 96.7 (its first run as a package, under load)
    # 93.7 in its first run as a package, under load, with the cluster tests failing early
    # (replica.py's paths run on PostgreSQL only).
    "server": 92.0,
    "slack": 87.0,  # 89.5 (its first run with a floor; Socket Mode's reconnects run rarely)
    "store": 94.0,  # 96.8
    "workspaces": 92.0,  # 94.3 (its first run with a floor)
}
TOTAL_FLOOR = 91.0  # 93.2
SRC = Path("src/clarion")


def packages() -> dict[str, list[str]]:
    """Each package's include patterns for `Coverage.report`."""
    found = {TOP_LEVEL_NAME: [str(SRC / "*.py")]}
    for child in sorted(SRC.iterdir()):
        if child.is_dir() and (child / "__init__.py").is_file():
            found[child.name] = [str(child / "*")]
    return found


def percent(cov: coverage.Coverage, include: list[str]) -> float | None:
    """The combined statement+branch percentage over `include`, None if nothing matched."""
    try:
        return cov.report(include=include, file=io.StringIO())
    except coverage.exceptions.NoDataError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail below the floors")
    args = parser.parse_args(argv)
    cov = coverage.Coverage()
    cov.load()
    failures: list[str] = []
    lines = [f"{'package':<16}{'cover':>8}{'floor':>8}"]
    for name, include in packages().items():
        floor = FLOORS.get(name, 0.0)
        got = percent(cov, include)
        shown = "-" if got is None else f"{got:.1f}%"
        lines.append(f"{name:<16}{shown:>8}{floor:>7.1f}%")
        if got is not None and got < floor:
            failures.append(f"{name}: {got:.2f}% is below its floor of {floor}%")
    total = percent(cov, [str(SRC / "*")]) or 0.0
    lines.append(f"{'TOTAL':<16}{total:>7.1f}%{TOTAL_FLOOR:>7.1f}%")
    if total < TOTAL_FLOOR:
        failures.append(f"total: {total:.2f}% is below its floor of {TOTAL_FLOOR}%")
    out = sys.stdout
    out.write("Branch coverage by package (per file: .venv/bin/coverage report)\n")
    out.write("\n".join(lines) + "\n")
    if args.check and failures:
        out.write("coverage below the floor:\n  " + "\n  ".join(failures) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
