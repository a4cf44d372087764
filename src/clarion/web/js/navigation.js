// Pending-owner navigation: which session to select when a person opens a task. Pure decisions
// (no DOM, no fetch), imported by main.js and the tests.
//
// Opening a task loads GET /tasks/{id}/task-sessions fresh. If the task's summary advertised a
// pending action, the newest session whose pending_action matches is selected before any
// remembered or primary session. A delayed result is trusted only if nothing moved under it:
// a failed load, a changed summary (revision or action), a vanished task or a newer load all
// fall back to the task route (task view, no session selected), so nobody is stranded and the
// current projection renders the authoritative owner.

import { taskPendingAction } from "./store.js";

/** @typedef {import("./store.js").StoreState} StoreState */
/** @typedef {import("./store.js").Session} Session */
/**
 * @typedef {{loadId: number, taskId: string, action: string | null,
 *   summaryRevision: number | null}} OwnerLoad  what the task advertised when the load began
 * @typedef {{kind: "session", taskId: string, sessionId: string, reason: string}
 *   | {kind: "task-only", taskId: string, reason: string}
 *   | {kind: "ignored", taskId: string, reason: "overtaken"}} Decision
 *   `ignored`: a newer load owns the screen (it starts from the task route), so this result
 *   changes nothing.
 */

/**
 * Captures what the task advertises as its session list load begins.
 * @param {StoreState} state
 * @param {string} taskId
 * @param {number} loadId a counter the caller increments for each load
 * @returns {OwnerLoad}
 */
export function beginOwnerLoad(state, taskId, loadId) {
  const summary = state.summaries[taskId];
  return {
    loadId,
    taskId,
    action: taskPendingAction(state, taskId),
    summaryRevision: summary ? summary.revision : null,
  };
}

/**
 * Newest first: created_at, then id, both descending.
 * @param {Session} a
 * @param {Session} b
 */
function newestFirst(a, b) {
  return String(b.created_at ?? "").localeCompare(String(a.created_at ?? "")) ||
    b.id.localeCompare(a.id);
}

/**
 * Picks the session to select from a freshly loaded list.
 * @param {Session[]} sessions
 * @param {{pendingAction?: string | null, rememberedId?: string | null}} hints
 * @returns {{sessionId: string, reason: string} | null}
 */
export function pickSession(sessions, hints) {
  const sorted = [...sessions].sort(newestFirst);
  if (hints.pendingAction) {
    const owner = sorted.find((s) => s.pending_action === hints.pendingAction);
    if (owner) return { sessionId: owner.id, reason: "pending-owner" };
  }
  if (hints.rememberedId && sorted.some((s) => s.id === hints.rememberedId)) {
    return { sessionId: hints.rememberedId, reason: "remembered" };
  }
  const primary = sorted.find((s) => s.is_primary === true);
  if (primary) return { sessionId: primary.id, reason: "primary" };
  return null;
}

/**
 * Decides where a finished (or failed) session-list load lands.
 * @param {{load: OwnerLoad, state: StoreState, latestLoadId: number,
 *   sessions?: Session[] | null, failed?: boolean, rememberedId?: string | null}} input
 *   `state` is the store as it is now, when the result arrives.
 * @returns {Decision}
 */
export function decideOwnerLoad(input) {
  const { load, state } = input;
  const taskId = load.taskId;
  if (input.latestLoadId !== load.loadId) return { kind: "ignored", taskId, reason: "overtaken" };
  if (!state.tasks[taskId]) return { kind: "task-only", taskId, reason: "task-gone" };
  if (input.failed || !input.sessions) return { kind: "task-only", taskId, reason: "load-failed" };
  const now = beginOwnerLoad(state, taskId, load.loadId);
  if (now.action !== load.action || now.summaryRevision !== load.summaryRevision) {
    return { kind: "task-only", taskId, reason: "summary-changed" };
  }
  const pick = pickSession(input.sessions, {
    pendingAction: load.action,
    rememberedId: input.rememberedId ?? null,
  });
  if (!pick) return { kind: "task-only", taskId, reason: "no-session" };
  return { kind: "session", taskId, sessionId: pick.sessionId, reason: pick.reason };
}
