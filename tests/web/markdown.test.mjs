// The safe Markdown subset: structure from plain text, never HTML from text.
import { test } from "node:test";
import assert from "node:assert/strict";

import { parseInline, parseMarkdown } from "../../src/clarion/web/js/markdown.js";

test("inline code, bold, italic and links are recognised; other text stays text", () => {
  assert.deepEqual(parseInline("Use `uv` and **never** *guess*, see [docs](https://x.dev/a)."), [
    { t: "text", text: "Use " }, { t: "code", text: "uv" }, { t: "text", text: " and " },
    { t: "strong", text: "never" }, { t: "text", text: " " }, { t: "em", text: "guess" },
    { t: "text", text: ", see " }, { t: "link", text: "docs", href: "https://x.dev/a" }, { t: "text", text: "." },
  ]);
});

test("a javascript: link stays as its text, and HTML is only text", () => {
  const inlines = parseInline("[click](javascript:alert(1))");
  assert.ok(inlines.every((i) => i.t === "text"));
  assert.equal(inlines.map((i) => i.text).join(""), "[click](javascript:alert(1))");
  assert.deepEqual(parseMarkdown("<script>alert(1)</script>"), [
    { type: "p", inlines: [{ t: "text", text: "<script>alert(1)</script>" }] },
  ]);
});

test("snake_case words are not italic", () => {
  assert.deepEqual(parseInline("set max_retry_count"), [{ t: "text", text: "set max_retry_count" }]);
});

test("headings, lists, fenced code and paragraphs are blocks", () => {
  const blocks = parseMarkdown("# Plan\n\nFirst line\nsecond line\n\n- a\n- b\n\n1. one\n2. two\n\n```\n<b>x</b>\n```");
  assert.deepEqual(blocks.map((b) => b.type), ["h", "p", "ul", "ol", "code"]);
  assert.deepEqual(blocks[1], { type: "p", inlines: [{ t: "text", text: "First line\nsecond line" }] });
  assert.equal(/** @type {any} */ (blocks[2]).items.length, 2);
  assert.deepEqual(blocks[4], { type: "code", text: "<b>x</b>" });
});
