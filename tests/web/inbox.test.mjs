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
  assert.equal(inboxMayChange("clarification.waiting.updated", {}), true);
});

test("the list puts deadlines first, soonest first, then the newest", async () => {
  const { inboxOrder } = await import("../../src/clarion/web/js/inbox.js");
  const at = (/** @type {string} */ id, /** @type {string} */ created, /** @type {string | null} */ expires = null) =>
    ({ ...ask, id, created_at: created, expires_at: expires });
  const items = [at("old", "2026-01-01T00:00:00Z"), at("new", "2026-01-01T02:00:00Z"),
    at("late", "2026-01-01T01:00:00Z", "2026-01-02T00:00:00Z"), at("soon", "2026-01-01T00:30:00Z", "2026-01-01T05:00:00Z")];
  assert.deepEqual(inboxOrder(items).map((i) => i.id), ["soon", "late", "new", "old"]);
});

test("a line says what is asked and in what state", async () => {
  const { itemStateWords, itemSummary } = await import("../../src/clarion/web/js/inbox.js");
  assert.equal(itemSummary(ask), "Which database?");
  assert.equal(itemSummary({ ...ask, questions: [{ prompt: "A?" }, { prompt: "B?" }, { prompt: "C?" }] }), "A? (+2 more)");
  assert.equal(itemSummary(perm), "Edit README.md");
  assert.equal(itemStateWords(ask), "Agent waiting");
  assert.equal(itemStateWords({ ...ask, state: "active_detached" }), "Agent paused, resumes on answer");
  assert.equal(itemStateWords(perm), "Needs a decision");
});

test("ages and dates read as words", async () => {
  const { age, stamp } = await import("../../src/clarion/web/js/time-words.js");
  const now = new Date("2026-03-10T12:00:00");
  assert.equal(age(new Date("2026-03-10T11:59:40").toISOString(), now), "just now");
  assert.equal(age(new Date("2026-03-10T11:55:00").toISOString(), now), "5 min ago");
  assert.equal(age(new Date("2026-03-10T09:00:00").toISOString(), now), "3 h ago");
  assert.equal(age(new Date("2026-03-08T12:00:00").toISOString(), now), "2 d ago");
  assert.match(stamp(new Date("2026-03-10T09:05:00").toISOString(), now), /09:05|9:05/);
  assert.match(stamp(new Date("2026-03-02T09:05:00").toISOString(), now), /Mar/);
  assert.match(stamp(new Date("2025-03-02T09:05:00").toISOString(), now), /2025/);
  assert.equal(age("nonsense", now), "");
});

test("a deadline reads as the time left and what follows; an escalation names who", async () => {
  const { deadlineWords, escalationWords } = await import("../../src/clarion/web/js/inbox.js");
  const now = Date.parse("2026-01-01T12:00:00Z");
  const item = { ...ask, expires_at: "2026-01-01T15:00:00Z", on_expiry: "skip", escalated_to: ["bob"] };
  assert.equal(deadlineWords(item, now), "expires in 3 h, then Skip");
  assert.equal(deadlineWords({ ...item, on_expiry: "default" }, now), "expires in 3 h, then the default answer");
  const withDefault = { ...item, on_expiry: "default", questions: [{ id: "db", prompt: "Which?",
    options: [{ option_id: "pg", label: "PostgreSQL" }, { option_id: "lite", label: "SQLite", default: true }] }] };
  assert.equal(deadlineWords(withDefault, now), "expires in 3 h, then the default answer: SQLite");
  assert.equal(deadlineWords({ ...item, expires_at: "2026-01-01T12:10:00Z" }, now), "expires in 10 min, then Skip");
  assert.equal(deadlineWords({ ...item, expires_at: "2026-01-01T11:00:00Z" }, now), "expires now, then Skip");
  assert.equal(deadlineWords(ask, now), null);
  assert.equal(escalationWords(item), "Escalated to bob");
  assert.equal(escalationWords(ask), null);
});
