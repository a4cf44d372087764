"""`--dist loadgroup` grouping again under pytest 9.2.

xdist (3.8) tells its scheduler a test's group by appending `@GROUP` to the test's id in each
worker, through `item._nodeid`. pytest 9.2 keeps a node's id in `item._id` (a structured
`NodeId`) and no longer reads `_nodeid`, so the suffix never reached the scheduler and every
group silently fell apart: each test went to whichever worker was free, and a module's or
package's shared server or browser started on every worker that ran one of its tests, and again
each time a worker came back to it (pytest-xdist issue 1386, open as of this writing).

This sets the id the way xdist means to, after xdist's own hook, and leaves it alone once xdist
does it itself.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


def group_suffix(item: pytest.Item) -> str | None:
    """`@NAME`, as xdist builds it from the item's `xdist_group` marks; None without one."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "@" + "_".join(sorted(names)) if names else None


@pytest.hookimpl(trylast=True)  # after xdist's hook, whose edit of the id this stands in for
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("loadgroup", default=False):  # set in xdist's workers alone
        return
    for item in items:
        suffix = group_suffix(item)
        if suffix is not None and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
