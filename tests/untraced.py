"""Coverage's subprocess hand-off: the environment variables through which a child Python
process starts tracing itself. A child started without them runs untraced: for processes that
run no Clarion code worth counting (the fuzzer, the bench smokes' servers and clients), tracing
would only cost CPU, about a third more."""

from __future__ import annotations

from collections.abc import Mapping

COVERAGE_HANDOFF = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")


def untraced(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without coverage's hand-off."""
    return {k: v for k, v in env.items() if k not in COVERAGE_HANDOFF}
