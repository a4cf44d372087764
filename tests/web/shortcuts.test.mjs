// Keyboard shortcuts and the board filter.
import { test } from "node:test";
import assert from "node:assert/strict";

import { moveIndex, shortcutFor } from "../../src/clarion/web/js/shortcuts.js";
import { noFilter, taskMatches, workspacesOf } from "../../src/clarion/web/js/board-filter.js";

test("? / j k are shortcuts, g i and g b go places, text fields and modifiers are left alone", () => {
  assert.equal(shortcutFor({ key: "?" }, false).shortcut, "help");
  assert.equal(shortcutFor({ key: "/" }, false).shortcut, "search");
  assert.equal(shortcutFor({ key: "j" }, false).shortcut, "next");
  assert.equal(shortcutFor({ key: "k" }, false).shortcut, "previous");
  const g = shortcutFor({ key: "g" }, false);
  assert.deepEqual(g, { shortcut: null, afterG: true });
  assert.equal(shortcutFor({ key: "i" }, g.afterG).shortcut, "inbox");
  assert.equal(shortcutFor({ key: "b" }, true).shortcut, "board");
  assert.equal(shortcutFor({ key: "i" }, false).shortcut, null);
  assert.equal(shortcutFor({ key: "j", inText: true }, false).shortcut, null);
  assert.equal(shortcutFor({ key: "k", ctrlKey: true }, false).shortcut, null);
});

test("j and k move within the list and stop at its ends", () => {
  assert.equal(moveIndex(-1, 3, 1), 0);
  assert.equal(moveIndex(-1, 3, -1), 2);
  assert.equal(moveIndex(2, 3, 1), 2);
  assert.equal(moveIndex(0, 3, -1), 0);
  assert.equal(moveIndex(0, 0, 1), -1);
});

test("the board filter matches words, the waiting state and the workspace", () => {
  const task = { title: "Orders backend", description: "Use PostgreSQL", workspace: "shop" };
  assert.ok(taskMatches(task, null, noFilter()));
  assert.ok(taskMatches(task, null, { ...noFilter(), text: "orders postgresql" }));
  assert.ok(!taskMatches(task, null, { ...noFilter(), text: "orders mysql" }));
  assert.ok(taskMatches(task, "clarification", { ...noFilter(), state: "waiting" }));
  assert.ok(!taskMatches(task, null, { ...noFilter(), state: "waiting" }));
  assert.ok(!taskMatches(task, "permission", { ...noFilter(), state: "not-waiting" }));
  assert.ok(!taskMatches(task, null, { ...noFilter(), workspace: "blog" }));
  assert.deepEqual(workspacesOf([task, { workspace: "blog" }, { workspace: "shop" }, {}]), ["blog", "shop"]);
});
