// Hash routes for the board, a task and a session.
import { test } from "node:test";
import assert from "node:assert/strict";

import { formatRoute, parseRoute } from "../../src/clarion/web/js/router.js";

test("an empty or unknown hash is the board", () => {
  assert.deepEqual(parseRoute(""), { name: "board" });
  assert.deepEqual(parseRoute("#/nowhere"), { name: "board" });
});

test("task and session routes round-trip", () => {
  for (const route of [{ name: "task", taskId: "t 1" }, { name: "session", taskId: "t1", sessionId: "s/2" }]) {
    assert.deepEqual(parseRoute(formatRoute(route)), route);
  }
  assert.equal(formatRoute({ name: "session", taskId: "a", sessionId: "b" }), "#/tasks/a/sessions/b");
});

test("a task's Changes view has its own route", () => {
  assert.equal(formatRoute({ name: "changes", taskId: "t 1" }), "#/tasks/t%201/changes");
  assert.deepEqual(parseRoute("#/tasks/t%201/changes"), { name: "changes", taskId: "t 1" });
});
