"""What the suite runs without coverage's tracer, and why.

Coverage's subprocess hand-off is two environment variables through which a child Python process
starts tracing itself; a child started without them runs untraced. Processes that run no Clarion
code worth counting (the fuzzer, the bench smokes' servers and clients) start without them:
tracing would only cost CPU, about a third more.

The servers and built-in agents the tests fork (tests/forkserver.py) are traced, except those of
the test modules in `UNTRACED_SERVERS`: modules that start many servers along paths other tests'
servers already trace. Under coverage a traced server costs about twice the CPU of an untraced
one, and the suite is CPU-bound on two cores, so these modules' tracing cost a run about 80 s
(pytest 560 s with every fork traced, 478 s with none, on an idle two-core host). Measured by
combining each forked process's coverage data by the module that started it: leaving these
modules' 437 of 753 forked processes out lost 0.7 points of branch coverage in all (95.0% to
94.3%; orchestrator 91.7% to 87.8%, agents 90.0% to 88.1%, every other package within 1.3
points), because what their servers run, other modules' servers or in-process tests run too.
What they test is unchanged: only the measuring is left out.

Add a module here only after measuring the same way that its servers reach nothing the rest
reaches (CONTRIBUTING.md, "Coverage"); a module whose servers reach code nothing else does (the
Slack and cluster modules, for one) stays traced.
"""

from __future__ import annotations

from collections.abc import Mapping

COVERAGE_HANDOFF = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")

# Test paths (a package's folder, or a module) whose forked servers and agents run untraced.
UNTRACED_SERVERS = (
    "tests/browser/",  # what the pages ask for, the API tests ask for; 0-5 arcs of their own
    "tests/published/",  # the published agents' servers take the built-in agent's paths
    "tests/e2e/test_crash_recovery.py",  # one restart per fault point; recovery traced elsewhere
    "tests/e2e/test_restart_path.py",
    "tests/e2e/test_soak.py",  # the same cycle many times
    "tests/e2e/test_agent_scenarios.py",
    "tests/e2e/test_waiting_policy.py",
    "tests/e2e/test_sandbox.py",
    "tests/e2e/test_graceful_stop.py",
    "tests/e2e/test_idle_stop.py",
    "tests/e2e/test_permissions.py",
    "tests/e2e/test_cluster_routes.py",
    "tests/e2e/test_workspaces.py",
    "tests/cli/test_cli_commands.py",
    "tests/hardening/test_schemathesis.py",
)


def untraced(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without coverage's hand-off."""
    return {k: v for k, v in env.items() if k not in COVERAGE_HANDOFF}


def servers_traced(nodeid: str) -> bool:
    """Whether the servers and agents forked for test `nodeid` are traced."""
    return not nodeid.startswith(UNTRACED_SERVERS)
