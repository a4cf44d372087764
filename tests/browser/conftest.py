"""Fixtures for the browser tests: Debian's Chromium driven by Playwright against real servers.

Playwright never downloads a browser here: it launches /usr/bin/chromium. When that binary is
missing the tests skip, or fail when CI or CLARION_REQUIRE_SERVICES is set.

`browser` and `shared_server` live for this test package (one Chromium, one server; the
Playwright event loop never outlives the package, so async tests elsewhere never meet it); each
test gets a fresh context and page, and its own tasks on the shared server. `page` fails the
test on any uncaught page error.

The package's tests are two xdist groups, each on a pytest worker with its own Chromium and
server: in a clean clone's `make test` each half took about 145 s of its worker, so that as one
group the package would hold one worker for about five minutes, much of a run's length. The
modules marked `ON_A_SECOND_WORKER` are about half of that time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.conftest import services_required
from tests.e2e.conftest import make_server, server  # noqa: F401
from tests.e2e.harness import ServerProcess, running_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Contexts share renderer processes instead of starting one each (107 -> 57 Chromium
    # processes for the package, about 5% less of Chromium's CPU).
    "--renderer-process-limit=2",
    "--disable-site-isolation-trials",
]
# The built-in agent starts a subprocess and an MCP client before it asks, so waits are generous;
# a passing run never waits this long.
WAIT_MS = 20_000
DESKTOP = {"width": 1280, "height": 720}
# The sizes people reported from: a laptop, a current phone and a small phone.
LAPTOP = {"width": 1366, "height": 850}
PHONE = {"width": 390, "height": 844}
SMALL_PHONE = {"width": 360, "height": 640}

expect.set_options(timeout=WAIT_MS)

ON_A_SECOND_WORKER = pytest.mark.xdist_group("tests/browser (second worker)")


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is not installed"
    if services_required():
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="package")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server for the browser tests; they keep apart by using their own tasks."""
    with running_server(tmp_path_factory.mktemp("browser-server")) as process:
        yield process


def _open_page(context: BrowserContext, errors: list[str]) -> Page:
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


@pytest.fixture
def new_page(browser: Browser) -> Iterator[Callable[..., Page]]:
    """Factory for pages in fresh contexts (own localStorage); `new_page(phone=True)` gives a
    390x844 touch screen (`viewport=` another size). Any uncaught error in a page fails the
    test at teardown."""
    contexts: list[BrowserContext] = []
    errors: list[str] = []

    def make(*, phone: bool = False, viewport: dict[str, int] | None = None) -> Page:
        options: dict[str, Any] = (
            {"viewport": viewport or PHONE, "has_touch": True, "is_mobile": True}
            if phone
            else {"viewport": viewport or DESKTOP}
        )
        context = browser.new_context(**options)
        contexts.append(context)
        return _open_page(context, errors)

    yield make
    for context in contexts:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def page(new_page: Callable[..., Page]) -> Page:
    return new_page()
