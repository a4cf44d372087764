// A permission request's preview: a diff for an edit or a write, the command of an execute, and
// what each option (Always allow included) means.
import { test } from "node:test";
import assert from "node:assert/strict";

import { lineDiff, optionMeaning, previewOf } from "../../src/clarion/web/js/permission-preview.js";

test("an edit's old and new text read as a line diff", () => {
  const preview = previewOf({ kind: "edit", raw_input: { file_path: "app.py", old_string: "a\nb\nc\n", new_string: "a\nB\nc\n" } });
  assert.equal(preview.type, "diff");
  assert.deepEqual(/** @type {any} */ (preview).lines, [
    { sign: " ", text: "a" }, { sign: "-", text: "b" }, { sign: "+", text: "B" }, { sign: " ", text: "c" },
  ]);
  assert.equal(/** @type {any} */ (preview).path, "app.py");
});

test("a write's content is all added lines, an ACP diff item wins over the raw input", () => {
  const write = /** @type {any} */ (previewOf({ kind: "edit", raw_input: { path: "README.md", content: "# Project\n\nUpdated.\n" } }));
  assert.deepEqual(write.lines.map((/** @type {any} */ l) => l.sign + l.text), ["+# Project", "+", "+Updated."]);
  const acp = /** @type {any} */ (previewOf({ raw_input: { x: 1 }, content: [{ type: "diff", path: "a", oldText: "x", newText: "y" }] }));
  assert.deepEqual(acp.lines.map((/** @type {any} */ l) => l.sign + l.text), ["-x", "+y"]);
});

test("an execute shows its command line, a fetch its address, anything else JSON", () => {
  assert.deepEqual(previewOf({ kind: "execute", raw_input: { command: ["git", "commit", "-m", "a b"], cwd: "/repo" } }),
    { type: "command", command: 'git commit -m "a b"', cwd: "/repo" });
  assert.deepEqual(previewOf({ kind: "execute", raw_input: { cmd: "make" } }), { type: "command", command: "make", cwd: "" });
  assert.deepEqual(previewOf({ kind: "fetch", raw_input: { url: "https://x.dev" } }), { type: "fetch", url: "https://x.dev" });
  assert.deepEqual(previewOf({ raw_input: { a: 1 } }), { type: "raw", text: '{\n  "a": 1\n}' });
  assert.deepEqual(previewOf({ raw_input: "cut… (truncated)" }), { type: "raw", text: "cut… (truncated)" });
  assert.deepEqual(previewOf({}), { type: "none" });
});

test("a very long change is shown whole, old then new", () => {
  const many = Array.from({ length: 500 }, (_, i) => `l${i}`).join("\n");
  const lines = lineDiff(many, "x");
  assert.equal(lines.length, 501);
  assert.deepEqual(lines[500], { sign: "+", text: "x" });
});

test("every option kind says what it covers", () => {
  assert.match(optionMeaning("allow_always", "edit"), /stops asking about edit calls/);
  assert.match(optionMeaning("allow_once", "edit"), /this one call/);
  assert.match(optionMeaning("reject_always", "execute"), /stops trying execute calls/);
  assert.match(optionMeaning("reject_once", "other"), /Refuse this call/);
  assert.equal(optionMeaning("strange", "edit"), "");
});
