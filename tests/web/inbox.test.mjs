// The inbox model: the tab title count, new items, notification words.
import { test } from "node:test";
import assert from "node:assert/strict";

import { newItems, notificationText, titleWithCount } from "../../src/clarion/web/js/inbox.js";

const ask = { kind: "clarification", id: "p1", task: { id: "t1", title: "Billing" }, session_id: "s1",
  state: "active_live", created_at: "2026-01-01T00:00:00Z", questions: [{ id: "db", prompt: "Which database?" }] };
const perm = { kind: "permission", id: "m1", task: { id: "t2", title: "Docs" }, session_id: "s2",
  state: "pending", created_at: "2026-01-01T00:00:01Z", tool_call: { title: "Edit README.md" }, options: [] };

test("the tab title carries the count only while something waits", () => {
  assert.equal(titleWithCount(2), "(2) Clarion");
  assert.equal(titleWithCount(0), "Clarion");
});

test("new items are the ones not seen before", () => {
  assert.deepEqual(newItems(new Set(["p1"]), [ask, perm]).map((i) => i.id), ["m1"]);
});

test("a notification names the task and the first question or the tool call", () => {
  assert.deepEqual(notificationText(ask), { title: "Agent asks in Billing", body: "Which database?" });
  assert.deepEqual(notificationText(perm), { title: "Agent asks permission in Docs", body: "Edit README.md" });
});

test("the inbox is read again after events that can change it, not after streamed text", async () => {
  const { inboxMayChange } = await import("../../src/clarion/web/js/inbox-controller.js");
  assert.equal(inboxMayChange("session.state_changed", {}), true);
  assert.equal(inboxMayChange("session.turn.completed", {}), true);
  assert.equal(inboxMayChange("session.message.added", { type: "clarification_request" }), true);
  assert.equal(inboxMayChange("session.message.updated", { type: "message", pending_action: null }), true);
  assert.equal(inboxMayChange("session.message.updated", { type: "message", content: "chunk" }), false);
  assert.equal(inboxMayChange("task.status_summary.updated", {}), false);
});
