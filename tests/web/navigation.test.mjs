// Pending-owner navigation decisions, one named behaviour each.
import { test } from "node:test";
import assert from "node:assert/strict";

import { beginOwnerLoad, decideOwnerLoad, pickSession } from "../../src/clarion/web/js/navigation.js";
import { applySummaryUpdate, applyTaskRead, beginTaskRead, emptyState } from "../../src/clarion/web/js/store.js";

const summary = (revision, pending) => ({ revision, ...(pending ? { pending_action: pending } : {}) });

function stateWith(pending, revision = 1) {
  return applyTaskRead(emptyState(), [{ id: "t1", title: "T", status_summary: summary(revision, pending) }],
    beginTaskRead(emptyState()));
}

const session = (id, created_at, extra = {}) => ({ id, task_id: "t1", created_at, pending_action: null,
  is_primary: false, ...extra });

const sessions = [
  session("primary", "2026-01-01T00:00:00Z", { is_primary: true }),
  session("old-owner", "2026-01-02T00:00:00Z", { pending_action: "clarification" }),
  session("remembered", "2026-01-03T00:00:00Z"),
  session("new-owner", "2026-01-04T00:00:00Z", { pending_action: "clarification" }),
  session("permission", "2026-01-05T00:00:00Z", { pending_action: "permission" }),
];

test("the newest session whose pending action matches wins over remembered and primary sessions", () => {
  const state = stateWith("clarification");
  const load = beginOwnerLoad(state, "t1", 1);
  const d = decideOwnerLoad({ load, state, latestLoadId: 1, sessions, rememberedId: "remembered" });
  assert.deepEqual(d, { kind: "session", taskId: "t1", sessionId: "new-owner", reason: "pending-owner" });
});

test("the pending owner must match the advertised action", () => {
  const state = stateWith("permission");
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 1), state, latestLoadId: 1, sessions });
  assert.equal(d.kind === "session" && d.sessionId, "permission");
});

test("without a pending action the remembered session is selected", () => {
  const state = stateWith(null);
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 1), state, latestLoadId: 1, sessions,
    rememberedId: "remembered" });
  assert.equal(d.kind === "session" && d.sessionId, "remembered");
});

test("without a pending action or a remembered session the primary session is selected", () => {
  const state = stateWith(null);
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 1), state, latestLoadId: 1, sessions,
    rememberedId: "deleted-session" });
  assert.equal(d.kind === "session" && d.sessionId, "primary");
});

test("a stale summary with no matching session falls back to remembered then primary", () => {
  const picked = pickSession([session("a", "1", { is_primary: true })], { pendingAction: "clarification" });
  assert.deepEqual(picked, { sessionId: "a", reason: "primary" });
});

test("no session to select leaves the task route", () => {
  const state = stateWith(null);
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 1), state, latestLoadId: 1, sessions: [] });
  assert.deepEqual(d, { kind: "task-only", taskId: "t1", reason: "no-session" });
});

test("a failed session load falls back to the task route", () => {
  const state = stateWith("clarification");
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 1), state, latestLoadId: 1, failed: true });
  assert.deepEqual(d, { kind: "task-only", taskId: "t1", reason: "load-failed" });
});

test("a newer summary revision during the load discards the delayed owner result", () => {
  const before = stateWith("clarification", 3);
  const load = beginOwnerLoad(before, "t1", 1);
  const after = applySummaryUpdate(before, { task_id: "t1", status_summary: summary(4, "clarification") }).state;
  const d = decideOwnerLoad({ load, state: after, latestLoadId: 1, sessions });
  assert.deepEqual(d, { kind: "task-only", taskId: "t1", reason: "summary-changed" });
});

test("a changed pending action during the load discards the delayed owner result", () => {
  // The legacy fields can change the advertised action without any summary revision.
  const base = applyTaskRead(emptyState(), [{ id: "t1", task_pending_action: "clarification" }], beginTaskRead(emptyState()));
  const load = beginOwnerLoad(base, "t1", 1);
  const after = applyTaskRead(base, [{ id: "t1", task_pending_action: null }], beginTaskRead(base));
  const d = decideOwnerLoad({ load, state: after, latestLoadId: 1, sessions });
  assert.equal(d.reason, "summary-changed");
});

test("a task that disappeared during the load falls back to the task route", () => {
  const state = stateWith("clarification");
  const load = beginOwnerLoad(state, "t1", 1);
  const gone = applyTaskRead(state, [], beginTaskRead(state), { complete: true });
  const d = decideOwnerLoad({ load, state: gone, latestLoadId: 1, sessions });
  assert.deepEqual(d, { kind: "task-only", taskId: "t1", reason: "task-gone" });
});

test("a newer load overtakes a delayed result, which then changes nothing", () => {
  const state = stateWith("clarification");
  const load = beginOwnerLoad(state, "t1", 1);
  const d = decideOwnerLoad({ load, state, latestLoadId: 2, sessions });
  assert.deepEqual(d, { kind: "ignored", taskId: "t1", reason: "overtaken" });
});

test("the overtaken check comes before a failure, so an old failure cannot reroute a newer view", () => {
  const state = stateWith("clarification");
  const d = decideOwnerLoad({ load: beginOwnerLoad(state, "t1", 5), state, latestLoadId: 6, failed: true });
  assert.equal(d.kind, "ignored");
});
