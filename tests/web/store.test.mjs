// The revision-ordered client store: every ordering rule, one named behaviour each.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  ClientStore,
  applyBoot,
  applyNotification,
  applyPendingProjection,
  applySessionList,
  applySessionRow,
  applySummaryUpdate,
  applyTaskRead,
  beginTaskRead,
  emptyState,
  noteEpoch,
  sessionsOfTask,
  taskPendingAction,
} from "../../src/clarion/web/js/store.js";
import { compareRevisions } from "../../src/clarion/web/js/revision.js";

const rev = (epoch, sequence) => ({ epoch: String(epoch), sequence });

function withSession(pending, revision) {
  return applySessionRow(emptyState(), {
    id: "s1",
    task_id: "t1",
    state: "RUNNING",
    pending_action: pending,
    pending_action_revision: revision,
  });
}

test("epochs compare numerically, not as strings", () => {
  assert.equal(compareRevisions(rev(9, 5), rev(10, 1)), -1);
  assert.equal(compareRevisions(rev("18446744073709551616", 0), rev("18446744073709551615", 9)), 1);
});

test("within one epoch the sequence orders revisions", () => {
  assert.equal(compareRevisions(rev(3, 4), rev(3, 5)), -1);
  assert.equal(compareRevisions(rev(3, 5), rev(3, 5)), 0);
});

test("a newer revision replaces the pending action", () => {
  const s = withSession(null, rev(1, 1));
  const out = applyPendingProjection(s, "s1", { pending_action: "clarification", pending_action_revision: rev(1, 2) });
  assert.equal(out.applied, true);
  assert.equal(out.state.sessions.s1.pending_action, "clarification");
  assert.deepEqual(out.state.sessions.s1.pending_action_revision, rev(1, 2));
});

test("an older sequence in the same epoch is rejected", () => {
  const s = withSession("clarification", rev(1, 5));
  const out = applyPendingProjection(s, "s1", { pending_action: null, pending_action_revision: rev(1, 4) });
  assert.equal(out.applied, false);
  assert.equal(out.reason, "older-revision");
  assert.equal(out.state.sessions.s1.pending_action, "clarification");
});

test("an older epoch is rejected even with a larger sequence", () => {
  const s = withSession("clarification", rev(2, 1));
  const out = applyPendingProjection(s, "s1", { pending_action: null, pending_action_revision: rev(1, 99) });
  assert.equal(out.applied, false);
  assert.equal(out.state.sessions.s1.pending_action, "clarification");
});

test("an event that omits pending_action keeps the prior value", () => {
  const s = withSession("clarification", rev(1, 1));
  const out = applyPendingProjection(s, "s1", { content: "edited", pending_action_revision: rev(1, 2) });
  assert.equal(out.applied, false);
  assert.equal(out.reason, "omitted");
  assert.equal(out.state.sessions.s1.pending_action, "clarification");
  assert.deepEqual(out.state.sessions.s1.pending_action_revision, rev(1, 1));
});

test("an explicit null pending_action clears it", () => {
  const s = withSession("clarification", rev(1, 1));
  const out = applyPendingProjection(s, "s1", { pending_action: null, pending_action_revision: rev(1, 2) });
  assert.equal(out.applied, true);
  assert.equal(out.state.sessions.s1.pending_action, null);
});

test("an older epoch arriving after a rebuild at a newer epoch is rejected", () => {
  // The store was rebuilt from /boot at epoch 7 and has not seen this session yet.
  let s = applyBoot(emptyState(), { epoch: "7", tasks: [] }, beginTaskRead(emptyState()));
  const out = applyPendingProjection(s, "s9", { pending_action: "clarification", pending_action_revision: rev(6, 500) });
  assert.equal(out.applied, false);
  assert.equal(out.reason, "stale-epoch");
  assert.equal(out.state.sessions.s9, undefined);
  s = applyPendingProjection(s, "s9", { pending_action: "clarification", pending_action_revision: rev(7, 1) }).state;
  assert.equal(s.sessions.s9.pending_action, "clarification");
});

test("the highest epoch seen comes from events as well as /boot and never goes down", () => {
  let s = withSession(null, rev(4, 1));
  assert.equal(s.highestEpoch, "4");
  s = noteEpoch(s, "3");
  assert.equal(s.highestEpoch, "4");
  s = applyBoot(s, { epoch: "12", tasks: [] }, beginTaskRead(s));
  assert.equal(s.highestEpoch, "12");
  // Another session's event from epoch 11 is now a pre-restart result.
  const out = applyPendingProjection(s, "s2", { pending_action: null, pending_action_revision: rev(11, 1) });
  assert.equal(out.applied, false);
});

test("a projection without a revision cannot overwrite an ordered one", () => {
  const s = withSession("clarification", rev(1, 1));
  const out = applyPendingProjection(s, "s1", { pending_action: null });
  assert.equal(out.applied, false);
  assert.equal(out.reason, "unordered");
});

test("a REST session snapshot follows the same revision rules as events", () => {
  let s = withSession("clarification", rev(2, 10));
  s = applySessionList(s, [
    { id: "s1", task_id: "t1", state: "WAITING_FOR_INPUT", pending_action: null, pending_action_revision: rev(2, 9) },
  ]);
  assert.equal(s.sessions.s1.pending_action, "clarification", "older snapshot rejected");
  assert.equal(s.sessions.s1.state, "WAITING_FOR_INPUT", "descriptive fields still refresh");
  s = applySessionList(s, [
    { id: "s1", task_id: "t1", state: "RUNNING", pending_action: null, pending_action_revision: rev(2, 11) },
  ]);
  assert.equal(s.sessions.s1.pending_action, null);
});

test("message notifications feed the session's pending projection", () => {
  let s = withSession(null, rev(1, 1));
  s = applyNotification(s, "session.message.added", {
    id: "m1", session_id: "s1", task_id: "t1", type: "clarification_request",
    pending_action: "clarification", pending_action_revision: rev(1, 2),
  });
  assert.equal(s.sessions.s1.pending_action, "clarification");
  s = applyNotification(s, "session.message.updated", { id: "m1", session_id: "s1", content: "x" });
  assert.equal(s.sessions.s1.pending_action, "clarification");
  s = applyNotification(s, "session.message.deleted", {
    id: "m1", session_id: "s1", pending_action: null, pending_action_revision: rev(1, 3),
  });
  assert.equal(s.sessions.s1.pending_action, null);
});

test("session.state_changed updates the session state", () => {
  let s = withSession(null, rev(1, 1));
  s = applyNotification(s, "session.state_changed", { session_id: "s1", task_id: "t1", new_state: "IDLE" });
  assert.equal(s.sessions.s1.state, "IDLE");
});

const task = (id, extra = {}) => ({ id, title: id, workflow_step: "backlog", task_pending_action: null,
  primary_session_pending_action: null, ...extra });
const summary = (revision, pending) => ({ revision, updated_at: "2026-01-01T00:00:00Z",
  ...(pending ? { pending_action: pending } : {}) });

test("a task read applies each summary", () => {
  const s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(1, "clarification") })],
    beginTaskRead(emptyState()));
  assert.equal(taskPendingAction(s, "t1"), "clarification");
  assert.equal(s.tasks.t1.status_summary, undefined, "summaries live in their own map");
});

test("a read in flight does not roll back a newer summary a WebSocket event delivered", () => {
  let s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(1, null) })], beginTaskRead(emptyState()));
  const start = beginTaskRead(s);
  s = applySummaryUpdate(s, { task_id: "t1", status_summary: summary(3, "clarification") }).state;
  s = applyTaskRead(s, [task("t1", { title: "renamed", status_summary: summary(2, null) })], start, { complete: true });
  assert.equal(s.summaries.t1.revision, 3);
  assert.equal(taskPendingAction(s, "t1"), "clarification");
  assert.equal(s.tasks.t1.title, "renamed", "other task fields still apply");
});

test("a read whose summary is not older than the live one is applied", () => {
  let s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(1, "clarification") })], beginTaskRead(emptyState()));
  const start = beginTaskRead(s);
  s = applySummaryUpdate(s, { task_id: "t1", status_summary: summary(2, "clarification") }).state;
  s = applyTaskRead(s, [task("t1", { status_summary: summary(4, null) })], start, { complete: true });
  assert.equal(s.summaries.t1.revision, 4);
  assert.equal(taskPendingAction(s, "t1"), null);
});

test("status_summary_invalidated drops the cached summary and exposes the legacy fields", () => {
  let s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(5, null) })], beginTaskRead(emptyState()));
  s = applyTaskRead(s, [task("t1", { status_summary_invalidated: true, task_pending_action: "clarification" })],
    beginTaskRead(s), { complete: true });
  assert.equal(s.summaries.t1, undefined);
  assert.equal(taskPendingAction(s, "t1"), "clarification");
});

test("an invalidating read cannot erase a newer live summary received while it was in flight", () => {
  let s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(5, null) })], beginTaskRead(emptyState()));
  const start = beginTaskRead(s);
  s = applySummaryUpdate(s, { task_id: "t1", status_summary: summary(6, "clarification") }).state;
  s = applyTaskRead(s, [task("t1", { status_summary_invalidated: true })], start, { complete: true });
  assert.equal(s.summaries.t1.revision, 6);
});

test("a live summary for a task the store did not know at read start survives an invalidating read", () => {
  const start = beginTaskRead(emptyState());
  let s = applySummaryUpdate(emptyState(), { task_id: "t1", status_summary: summary(2, "clarification") }).state;
  s = applyTaskRead(s, [task("t1", { status_summary_invalidated: true })], start, { complete: true });
  assert.equal(taskPendingAction(s, "t1"), "clarification");
});

test("a read that omits the summary keeps the cached one", () => {
  let s = applyTaskRead(emptyState(), [task("t1", { status_summary: summary(5, "permission") })], beginTaskRead(emptyState()));
  s = applyTaskRead(s, [task("t1")], beginTaskRead(s), { complete: true });
  assert.equal(s.summaries.t1.revision, 5);
  assert.equal(taskPendingAction(s, "t1"), "permission");
});

test("task.status_summary.updated with an older revision is ignored", () => {
  let s = applySummaryUpdate(emptyState(), { task_id: "t1", status_summary: summary(4, "clarification") }).state;
  const out = applySummaryUpdate(s, { task_id: "t1", status_summary: summary(3, null) });
  assert.equal(out.applied, false);
  s = applyNotification(s, "task.status_summary.updated", { task_id: "t1", status_summary: summary(3, null) });
  assert.equal(s.summaries.t1.revision, 4);
  s = applyNotification(s, "task.status_summary.updated", { task_id: "t1", status_summary: summary(5, null) });
  assert.equal(taskPendingAction(s, "t1"), null);
});

test("a complete read removes tasks known at its start but keeps tasks created meanwhile", () => {
  let s = applyTaskRead(emptyState(), [task("gone"), task("kept")], beginTaskRead(emptyState()));
  const start = beginTaskRead(s);
  s = applyTaskRead(s, [task("new")], beginTaskRead(s)); // e.g. POST /tasks while the list was in flight
  s = applyTaskRead(s, [task("kept")], start, { complete: true });
  assert.deepEqual(Object.keys(s.tasks).sort(), ["kept", "new"]);
});

test("sessionsOfTask lists one task's sessions oldest first", () => {
  let s = emptyState();
  s = applySessionRow(s, { id: "b", task_id: "t1", created_at: "2026-01-02", pending_action: null });
  s = applySessionRow(s, { id: "a", task_id: "t1", created_at: "2026-01-01", pending_action: null });
  s = applySessionRow(s, { id: "c", task_id: "t2", created_at: "2026-01-01", pending_action: null });
  assert.deepEqual(sessionsOfTask(s, "t1").map((x) => x.id), ["a", "b"]);
});

test("the observable store notifies only on change", () => {
  const store = new ClientStore();
  let calls = 0;
  const off = store.subscribe(() => { calls += 1; });
  store.notify("task.status_summary.updated", { task_id: "t1", status_summary: summary(2, null) });
  store.notify("task.status_summary.updated", { task_id: "t1", status_summary: summary(1, null) });
  store.notify("unknown.action", {});
  assert.equal(calls, 1);
  off();
  store.notify("task.status_summary.updated", { task_id: "t1", status_summary: summary(3, null) });
  assert.equal(calls, 1);
});
