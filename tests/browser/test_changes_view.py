"""The Changes view: a task's diff in its own worktree, line comments gathered into one review,
Send review starting the agent's next turn, and a busy agent's refusal, on a laptop and a phone.

One server for the module with a configured repository; each test makes its own task, whose
first session's built-in agent writes files into the task's worktree (`/scenario write`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import LAPTOP
from tests.browser.ui_steps import clipped_elements, open_board, screenshot
from tests.e2e.harness import ServerProcess, running_server
from tests.workspaces.gitrepo import make_repository

pytestmark = pytest.mark.browser

GREETER = "def greet(name: str) -> str:\n    return f'hello {name}'\n"
README = "# Greeter\n\nSays hello.\n"


@pytest.fixture(scope="module")
def repo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("changes-view")
    repository = make_repository(tmp, {"README.md": README, "src/app.py": "print('app')\n"})
    config = tmp / "clarion.toml"
    config.write_text(f'[repositories.greeter]\npath = "{repository}"\n', encoding="utf-8")
    with running_server(tmp, CLARION_CONFIG=str(config)) as server:
        yield server


def task_with_changes(server: ServerProcess, title: str) -> tuple[str, str]:
    """A task on the repository whose agent wrote a new module and edited the README:
    (task_id, session_id), once both writes are done."""
    task = server.ok("POST", "/tasks", 201, json={"title": title, "repository": "greeter"})["task"]
    session_id = server.start_session(
        task["id"], f"/scenario write path=src/greet.py text={GREETER}"
    )
    server.wait_for_agent_text(session_id, "wrote src/greet.py")
    readme = "# Greeter\n\nSays hello to you.\n\nUsage: greet('you').\n"
    server.ok("POST", f"/task-sessions/{session_id}/prompt", 202, json={
        "text": f"/scenario write path=README.md text={readme}"})  # fmt: skip
    server.wait_for_agent_text(session_id, "wrote README.md")
    return str(task["id"]), session_id


def open_changes(page: Page, server: ServerProcess, task_id: str, *, tap: bool = False) -> None:
    """From the board: the card opens the task's session, whose header leads to the changes."""
    open_board(page, server)
    card = page.get_by_test_id(f"task-card-{task_id}")
    changes = page.get_by_test_id("session-changes")
    if tap:
        card.tap()
        changes.tap()
    else:
        card.click()
        changes.click()
    expect(page.get_by_test_id("changes-view")).to_be_visible()


def file_section(page: Page, path: str) -> Locator:
    return page.locator(f'[data-testid="changes-file"][data-path="{path}"]')


# Both tables of a split file diff have as many rows, and each comment row is as tall as the
# other side's row beside it.
_SIDES_LEVEL = """(path) => {
  const section = document.querySelector(`[data-testid="changes-file"][data-path="${path}"]`);
  const sides = [...section.querySelectorAll(".d2h-file-side-diff tbody")];
  const [left, right] = sides.map((body) => [...body.rows]);
  if (!left || left.length !== right.length) return false;
  const top = (row) => row.getBoundingClientRect().top;
  return left.every((row, i) => Math.abs(top(row) - top(right[i])) < 1.5);
}"""


def line_button(section: Locator, number: int, *, side: str = "new") -> Locator:
    """The number cell a person clicks to comment on a line (in a split view, the side's)."""
    label = f"Comment on line {number}" if side == "new" else f"Comment on removed line {number}"
    return section.get_by_role("button", name=label, exact=True)


def test_a_person_reads_the_diff_comments_on_a_line_sends_the_review_and_sees_the_reply(
    repo_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id, session_id = task_with_changes(repo_server, "Greet people")
    page = new_page(viewport=LAPTOP)
    open_changes(page, repo_server, task_id)

    items = page.get_by_test_id("changes-file-item")
    expect(items).to_have_count(2)
    greet = items.filter(has_text="src/greet.py")
    expect(greet.get_by_test_id("file-status")).to_have_text("added")
    expect(greet.get_by_test_id("file-counts")).to_have_text("+2 −0")
    expect(items.filter(has_text="README.md").get_by_test_id("file-counts")).to_have_text("+3 −1")
    expect(page.get_by_test_id("changes-summary")).to_have_text("2 files changed, +5 −1")
    expect(page.get_by_test_id("changes-where")).to_have_text(f"clarion/{task_id} against main")

    section = file_section(page, "src/greet.py")
    expect(section).to_contain_text("return f'hello {name}'")
    # Highlighted as Python by the vendored renderer: `def` is a keyword span.
    expect(section.locator(".hljs-keyword").first).to_have_text("def")

    page.get_by_test_id("changes-layout-split").click()
    expect(section.locator(".d2h-file-side-diff")).to_have_count(2)
    line_button(section, 2).click()
    page.get_by_test_id("review-comment-input").fill("Say hello with a capital H.")
    page.get_by_test_id("review-comment-add").click()
    comment = section.get_by_test_id("review-comment")
    expect(comment).to_have_attribute("data-line", "2")
    expect(comment).to_contain_text("Say hello with a capital H.")
    expect(page.get_by_test_id("review-count")).to_have_text("1 comment")

    # The comment stays with its line when the layout changes.
    page.get_by_test_id("changes-layout-unified").click()
    expect(section.locator(".d2h-file-side-diff")).to_have_count(0)
    expect(section.get_by_test_id("review-comment")).to_have_attribute("data-line", "2")
    page.get_by_test_id("changes-layout-split").click()
    expect(section.get_by_test_id("review-comment")).to_have_attribute("data-side", "new")

    # A removed line is commented on the old side; the new side gets a spacer row as tall.
    readme = file_section(page, "README.md")
    line_button(readme, 3, side="old").click()
    page.get_by_test_id("review-comment-input").fill("Keep it short.")
    page.get_by_test_id("review-comment-add").click()
    expect(readme.get_by_test_id("review-comment")).to_have_attribute("data-side", "old")
    assert page.evaluate(_SIDES_LEVEL, "README.md"), "the two sides are not level"
    section.get_by_test_id("review-comment").scroll_into_view_if_needed()
    screenshot(page, "changes-desktop")
    page.get_by_test_id("review-finish").click()
    expect(page.get_by_test_id("review-summary")).to_be_focused()
    page.get_by_test_id("review-summary").fill("Nearly there.")

    page.get_by_test_id("review-send").click()
    expect(page.get_by_test_id("review-status")).to_contain_text("Review sent")
    expect(page.get_by_test_id("review-count")).to_have_text(
        "No comments yet: click a line to comment"
    )
    expect(section.get_by_test_id("review-comment")).to_have_count(0)
    page.get_by_test_id("review-open-session").click()
    transcript = page.get_by_test_id("transcript")
    expect(transcript).to_contain_text(
        "Received: Review of your changes:\nsrc/greet.py:2: Say hello with a capital H.\n"
        "README.md:3: (on a removed line) Keep it short."
    )
    expect(transcript).to_contain_text("Nearly there.")
    assert session_id in page.url


def test_on_a_phone_a_busy_agent_refuses_the_review_and_the_comments_are_kept(
    repo_server: ServerProcess, new_page: Callable[..., Page]
) -> None:
    task_id, session_id = task_with_changes(repo_server, "Greet from a phone")
    # A question now waits for the person: a review would be a second conversation.
    repo_server.ok(
        "POST", f"/task-sessions/{session_id}/prompt", 202, json={"text": "/scenario ask"}
    )
    repo_server.wait_for_bundle(session_id)
    page = new_page(phone=True)
    open_changes(page, repo_server, task_id, tap=True)
    expect(page.get_by_test_id("changes-layout-unified")).to_have_attribute("aria-pressed", "true")

    section = file_section(page, "README.md")
    line_button(section, 5).tap()
    page.get_by_test_id("review-comment-input").fill("Show the output too.")
    page.get_by_test_id("review-comment-add").tap()
    expect(section.get_by_test_id("review-comment")).to_contain_text("Show the output too.")
    screenshot(page, "changes-phone")

    page.get_by_test_id("review-finish").tap()
    page.get_by_test_id("review-send").tap()
    status = page.get_by_test_id("review-status")
    expect(status).to_have_attribute("data-code", "session_busy")
    expect(status).to_contain_text("The agent is busy")
    expect(page.get_by_test_id("review-count")).to_have_text("1 comment")
    expect(page.get_by_test_id("review-send")).to_be_enabled()
    assert clipped_elements(page, "review-panel") == []

    # The draft outlives a reload: nothing the person wrote is lost to the refusal.
    page.reload()
    expect(file_section(page, "README.md").get_by_test_id("review-comment")).to_contain_text(
        "Show the output too."
    )


def test_a_task_without_a_repository_has_no_changes_button_and_its_url_says_why(
    repo_server: ServerProcess, page: Page
) -> None:
    task_id = repo_server.create_task("No repository")
    open_board(page, repo_server)
    page.get_by_test_id(f"task-card-{task_id}").click()
    expect(page.get_by_test_id("task-view-title")).to_have_text("No repository")
    expect(page.get_by_test_id("task-changes")).to_have_count(0)
    page.goto(f"{repo_server.url}/#/tasks/{task_id}/changes")
    expect(page.get_by_test_id("changes-status")).to_contain_text("no worktree")
