"""What people expect from a board and do not want to hunt for: search and filters (words,
waiting state, workspace), keyboard shortcuts (`?`, `/`, `j`/`k`, `g i`), dark mode when the
system asks, Markdown rendered without raw HTML, dates with the full time on hover, an empty
board that says how to start an agent, a choice of the configured agent profiles, and the
question mark badge in words."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP
from tests.browser.ui_steps import open_board, start_session
from tests.e2e.harness import ServerProcess, running_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("empty-server")) as server:
        yield server


def test_an_empty_board_says_how_to_start_an_agent_and_offers_the_configured_profiles(
    empty_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    page = new_page(viewport=LAPTOP)
    open_board(page, empty_server)
    expect(page.get_by_test_id("board-empty")).to_contain_text("Start session")

    task_id = empty_server.create_task("The first task")
    expect(page.get_by_test_id("board-empty")).to_have_count(0)
    page.get_by_test_id(f"task-card-{task_id}").click()
    agent = page.get_by_test_id("new-session-agent")
    expect(agent.locator("option")).to_contain_text(["builtin"])
    expect(agent).to_have_value("builtin")
    assert agent.evaluate("el => el.tagName") == "SELECT"


def test_search_filters_shortcuts_markdown_badge_words_and_dates(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    quiet = shared_server.create_task(
        "Zebra notes", "Some **bold** words, `code`, and <script>window.__bad = 1</script>"
    )
    asking = shared_server.create_task("Zebra question")
    start_session(shared_server, asking, "/scenario ask")
    elsewhere = shared_server.ok(
        "POST", "/tasks", 201, json={"title": "Zebra elsewhere", "workspace": "zebra-ws"}
    )["task"]["id"]
    page = new_page(viewport=LAPTOP)
    open_board(page, shared_server)
    waiting_card = page.get_by_test_id(f"task-card-{asking}")
    expect(waiting_card.get_by_test_id("pending-words")).to_have_text("Needs your answer")

    page.locator("body").press("/")
    search = page.get_by_test_id("board-search")
    expect(search).to_be_focused()
    search.press_sequentially("zebra")
    cards = page.locator("[data-testid^=task-card-]")
    expect(cards).to_have_count(3)
    page.get_by_test_id("board-filter-state").select_option("waiting")
    expect(cards).to_have_count(1)
    expect(waiting_card).to_be_visible()
    page.get_by_test_id("board-filter-state").select_option("")
    workspace = page.get_by_test_id("board-filter-workspace")
    workspace.select_option("zebra-ws")
    expect(cards).to_have_count(1)
    expect(page.get_by_test_id(f"task-card-{elsewhere}")).to_be_visible()
    workspace.select_option("")
    expect(cards).to_have_count(3)

    search.blur()
    page.keyboard.press("j")
    expect(page.locator("#board .card-open").first).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#board .card-open").nth(1)).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator("#board .card-open").first).to_be_focused()
    page.keyboard.press("?")
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
    expect(page.get_by_test_id("shortcuts-help")).to_contain_text("Go to the inbox")
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("shortcuts-help")).to_be_hidden()
    page.keyboard.press("g")
    page.keyboard.press("i")
    expect(page.get_by_test_id("inbox-view")).to_be_visible()
    # The inbox takes the page's width; the board is one step back.
    page.get_by_test_id("inbox-back").click()

    page.get_by_test_id(f"task-card-{quiet}").click()
    description = page.get_by_test_id("task-description")
    expect(description.locator("strong")).to_have_text("bold")
    expect(description.locator("code")).to_have_text("code")
    expect(description).to_contain_text("<script>window.__bad = 1</script>")
    assert description.locator("script").count() == 0
    assert page.evaluate("window.__bad") is None

    page.get_by_test_id(f"task-card-{asking}").click()
    stamp = page.get_by_test_id("transcript").locator("time").first
    expect(stamp).to_have_attribute("title", re.compile(r"\d{4}"))


def test_shortcuts_work_after_the_help_closes_over_a_board_that_changed_meanwhile(
    shared_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    first = shared_server.create_task("Quokka one")
    page = new_page(viewport=LAPTOP)
    open_board(page, shared_server)
    page.locator("body").press("/")
    page.get_by_test_id("board-search").press_sequentially("quokka")
    cards = page.locator("[data-testid^=task-card-]")
    expect(cards).to_have_count(1)
    page.get_by_test_id("board-search").blur()
    page.keyboard.press("j")
    expect(page.get_by_test_id(f"task-open-{first}")).to_be_focused()

    page.keyboard.press("?")
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()
    # A change while the help is open rebuilds the board: the card that had the focus is gone.
    shared_server.create_task("Quokka two")
    expect(cards).to_have_count(2)
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("shortcuts-help")).to_be_hidden()
    expect(page.get_by_test_id(f"task-open-{first}")).to_be_focused()
    page.keyboard.press("g")
    page.keyboard.press("i")
    expect(page.get_by_test_id("inbox-view")).to_be_visible()

    page.keyboard.press("g")
    page.keyboard.press("b")
    expect(page.get_by_test_id("inbox-view")).to_have_count(0)
    # Keys that reach a control of the closed help (the browser moves the focus off it a moment
    # after it closed) are shortcuts like any other.
    page.evaluate(
        """() => {
            const close = document.querySelector("[data-testid=shortcuts-close]");
            for (const key of ["g", "i"])
                close.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
        }"""
    )
    expect(page.get_by_test_id("inbox-view")).to_be_visible()


def test_dark_mode_follows_the_system(shared_server: ServerProcess, page: Page) -> None:
    page.emulate_media(color_scheme="dark")
    open_board(page, shared_server)
    background = _luminance(page, "document.body", "backgroundColor")
    ink = _luminance(page, "document.querySelector('.topbar h1')", "color")
    assert background < 0.2 and ink > 0.8, (background, ink)
    page.emulate_media(color_scheme="light")
    light = _luminance(page, "document.body", "backgroundColor")
    assert light > 0.9


def _luminance(page: Page, element: str, prop: str) -> float:
    """The relative luminance (0 dark .. 1 light) of an element's computed colour `prop`."""
    return float(
        page.evaluate(
            f"() => {{ const [r, g, b] = getComputedStyle({element}).{prop}"
            ".match(/\\d+/g).map(Number); return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255; }"
        )
    )
