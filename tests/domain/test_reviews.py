"""A review's prompt and the paths its comments may name."""

from __future__ import annotations

import pytest

from clarion.domain.errors import InvalidInput
from clarion.domain.reviews import (
    ReviewComment,
    review_claim_key,
    review_prompt,
    worktree_relative,
)

ROOT = "/srv/worktrees/t1"


@pytest.mark.parametrize(
    ("path", "relative"),
    [
        ("src/app.py", "src/app.py"),
        ("./src/../README.md", "README.md"),
        (f"{ROOT}/src/app.py", "src/app.py"),
    ],
)
def test_a_path_inside_the_worktree_is_kept_relative_to_it(path: str, relative: str) -> None:
    assert worktree_relative(path, ROOT, field="comments[0].path") == relative


@pytest.mark.parametrize(
    "path",
    ["../other/x.py", "src/../../x.py", "/etc/passwd", "/srv/worktrees/t10/x.py", ROOT, "", " "],
)
def test_a_path_that_leaves_the_worktree_is_refused_naming_the_field(path: str) -> None:
    with pytest.raises(InvalidInput, match=r"worktree|path") as caught:
        worktree_relative(path, ROOT, field="comments[2].path")
    assert caught.value.field == "comments[2].path"


def test_the_prompt_lists_each_comment_on_its_line_then_the_summary() -> None:
    prompt = review_prompt(
        [
            ReviewComment("src/app.py", 12, "rename\nthis"),
            ReviewComment("README.md", None, "say why"),
        ],
        "  Otherwise fine.  ",
    )
    assert prompt == (
        "Review of your changes:\nsrc/app.py:12: rename this\nREADME.md: say why\nOtherwise fine."
    )
    assert review_prompt([], "Only a summary") == "Review of your changes:\nOnly a summary"


def test_a_review_without_a_summary_is_its_heading_and_comments_only() -> None:
    comment = ReviewComment(path="a.py", line=None, body="tidy   this")
    assert review_prompt([comment], None) == "Review of your changes:\na.py: tidy this"
    assert review_prompt([comment], "  ") == "Review of your changes:\na.py: tidy this"


def test_a_reviews_claim_key_names_its_turn() -> None:
    assert review_claim_key("t1") == "review:t1"
