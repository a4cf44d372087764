"""The emails' Markdown renderer and the permission preview, branch by branch (pure rules)."""

from __future__ import annotations

from clarion.domain.email_parts import (
    chosen_answers,
    expiry_words,
    inline_html,
    inline_text,
    markdown_html,
    markdown_text,
    pre_html,
    tool_preview,
)


def test_emphasis_renders_as_em_and_reads_as_its_words() -> None:
    assert inline_html("an *important* word") == "an <em>important</em> word"
    assert inline_text("an *important* word") == "an important word"


def test_a_link_with_an_unsafe_address_stays_as_typed_and_escaped() -> None:
    assert inline_html("[tap](javascript:alert(1))") == "[tap](javascript:alert(1))"
    assert inline_text("[docs](https://example.org)") == "docs (https://example.org)"


def test_a_code_fence_headings_and_lists_become_blocks() -> None:
    source = (
        "# Title\n\nintro line\nsecond line\n\n```\nx < 1\n```\n"
        "- one\n- two\n\n1. first\n2) second\n"
    )
    rendered = markdown_html(source)
    assert '<p style="margin:0 0 8px;font-weight:600">Title</p>' in rendered
    assert "intro line<br>second line" in rendered
    assert "x &lt; 1</pre>" in rendered
    assert "<ul" in rendered and "<li>one</li><li>two</li></ul>" in rendered
    assert "<ol" in rendered and "<li>first</li><li>second</li></ol>" in rendered


def test_a_list_after_a_blank_line_starts_a_new_list() -> None:
    assert markdown_html("- a\n\n- b").count("<ul") == 2


def test_the_plain_text_part_keeps_code_indented_and_lists_as_lines() -> None:
    text = markdown_text("Pick **one**\n\n```\nrun it\n```\n\n* a\n* b")
    assert text == "Pick one\n\n    run it\n\n- a\n- b"


def test_an_answer_names_options_the_default_and_the_persons_text() -> None:
    questions = (
        {
            "id": "db",
            "title": "Database",
            "options": [
                {"option_id": "pg", "label": "PostgreSQL"},
                {"option_id": "lite", "label": "SQLite", "default": True},
            ],
        },
        {"id": "why", "prompt": "Why?", "options": []},
    )
    response = {
        "answers": [
            {"question_id": "db", "selected_options": ["lite"], "custom_text": ""},
            {"question_id": "why", "selected_options": [], "custom_text": "small"},
            {"question_id": "gone", "selected_options": [], "custom_text": ""},
        ]
    }
    assert chosen_answers(questions, response, by_policy=True) == [
        ("Database", "SQLite, the default"),
        ("Why?", "“small”"),
        ("gone", "no answer"),
    ]
    assert chosen_answers(questions, {"rejected": True}, by_policy=False) == [
        ("All questions", "Skipped")
    ]


def test_expiry_words_say_what_happens_at_the_deadline() -> None:
    questions = ({"options": [{"option_id": "a", "label": "A", "default": True}]},)
    assert expiry_words(questions, "default").endswith("the default answer: A.")
    assert expiry_words((), "default").endswith("the default answer.")
    assert expiry_words((), "skip") == "If no one answers by then, the question is skipped."
    assert expiry_words((), "keep") == "The question stays open after it."


def test_a_permission_preview_shows_what_the_tool_call_would_do() -> None:
    diff = tool_preview(
        {"content": [{"type": "text"}, {"type": "diff", "path": "a.txt", "newText": "new\n"}]}
    )
    assert diff is not None and diff[0] == "Change" and "+new" in diff[1]
    assert tool_preview({"content": [{"type": "diff", "path": "a.txt"}]}) is None
    assert tool_preview({}) is None
    assert tool_preview({"raw_input": "ls -la"}) == ("Input", "ls -la")
    assert tool_preview({"raw_input": [1, 2]}) == ("Input", "[\n  1,\n  2\n]")
    edit = tool_preview({"raw_input": {"file_path": "b.py", "old_string": "x", "new_string": "y"}})
    assert edit is not None and "-x" in edit[1] and "+y" in edit[1]
    written = tool_preview({"raw_input": {"path": "c.md", "content": "hello"}})
    assert written is not None and written[0] == "New content" and "+hello" in written[1]
    assert tool_preview({"raw_input": {"command": ["echo", "two words"], "cwd": "/w"}}) == (
        "Command",
        'echo "two words"\n(in /w)',
    )
    assert tool_preview({"raw_input": {"cmd": "make"}}) == ("Command", "make")
    assert tool_preview({"raw_input": {"url": "https://x.test"}}) == ("Address", "https://x.test")
    assert tool_preview({"raw_input": {"other": 1}}) == ("Input", '{\n  "other": 1\n}')


def test_a_long_diff_is_cut_with_a_count_of_what_was_left_out() -> None:
    after = "".join(f"line {n}\n" for n in range(400))
    preview = tool_preview({"raw_input": {"path": "big.txt", "content": after}})
    assert preview is not None and preview[1].splitlines()[-1].endswith("more lines")


def test_preformatted_text_is_escaped() -> None:
    assert pre_html("<b>").endswith(">&lt;b&gt;</pre>")
