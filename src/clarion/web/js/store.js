// The revision-ordered client store: tasks with their status summaries, and sessions with their
// pending_action projection. Pure functions over a plain state object (no DOM, no I/O) plus a
// small observable class that main.js, ws.js and the views share. Events trigger fresh server
// reads, they never carry pending truth, so every rule here is about never letting an older read
// overwrite a newer one.

import { compareRevisions, isRevision, maxEpoch, parseEpoch } from "./revision.js";

/** @typedef {import("./revision.js").Revision} Revision */
/**
 * @typedef {{revision: number, updated_at?: string, pending_action?: string | null,
 *   [key: string]: unknown}} StatusSummary
 * @typedef {{id: string, title?: string, description?: string, workflow_step?: string,
 *   primary_session_pending_action?: string | null, task_pending_action?: string | null,
 *   [key: string]: unknown}} Task  task fields, without status_summary (kept in `summaries`)
 * @typedef {{id: string, task_id?: string, agent?: string, state?: string, is_primary?: boolean,
 *   pending_action?: string | null, pending_action_revision?: Revision | null,
 *   created_at?: string, [key: string]: unknown}} Session
 * @typedef {{highestEpoch: string | null, tasks: Record<string, Task>,
 *   summaries: Record<string, StatusSummary>, sessions: Record<string, Session>}} StoreState
 * @typedef {{summaryRevisions: Record<string, number | null>, taskIds: string[]}} ReadStart
 *   what the store held when a task-list read was sent
 * @typedef {{state: StoreState, applied: boolean, reason: string}} Outcome
 */

/** @returns {StoreState} */
export function emptyState() {
  return { highestEpoch: null, tasks: {}, summaries: {}, sessions: {} };
}

const has = (/** @type {object} */ obj, /** @type {string} */ key) =>
  Object.prototype.hasOwnProperty.call(obj, key);

/**
 * @param {StoreState} state
 * @param {string} reason
 * @returns {Outcome}
 */
const rejected = (state, reason) => ({ state, applied: false, reason });

/**
 * Raises the highest epoch seen (from /boot, a snapshot or an event). Never lowers it.
 * @param {StoreState} state
 * @param {unknown} epoch
 * @returns {StoreState}
 */
export function noteEpoch(state, epoch) {
  const next = maxEpoch(state.highestEpoch, epoch);
  return next === state.highestEpoch ? state : { ...state, highestEpoch: next };
}

/**
 * Applies one session's pending projection (from a WebSocket event or a REST snapshot row).
 * - `pending_action` omitted: the projection failed or the update was content-only; keep the
 *   prior value. Explicit `null` clears it.
 * - A revision older than the session's current one is rejected, and so is any revision from an
 *   epoch older than the highest epoch seen (a pre-restart result arriving after a rebuild).
 * - A projection without a revision cannot be ordered: it is applied only while the session has
 *   no revision yet.
 * @param {StoreState} state
 * @param {string} sessionId
 * @param {{task_id?: string, pending_action?: string | null,
 *   pending_action_revision?: unknown}} fields
 * @returns {Outcome}
 */
export function applyPendingProjection(state, sessionId, fields) {
  if (!has(fields, "pending_action")) return rejected(state, "omitted");
  const current = state.sessions[sessionId];
  const rev = fields.pending_action_revision;
  if (isRevision(rev)) {
    const highest = state.highestEpoch === null ? null : parseEpoch(state.highestEpoch);
    if (highest !== null && /** @type {bigint} */ (parseEpoch(rev.epoch)) < highest) {
      return rejected(state, "stale-epoch");
    }
    const currentRev = current?.pending_action_revision;
    if (isRevision(currentRev) && compareRevisions(rev, currentRev) < 0) {
      return rejected(state, "older-revision");
    }
  } else if (isRevision(current?.pending_action_revision)) {
    return rejected(state, "unordered");
  }
  const revision = isRevision(rev) ? { epoch: String(rev.epoch), sequence: rev.sequence } : null;
  /** @type {Session} */
  const session = {
    ...(current ?? { id: sessionId }),
    ...(fields.task_id ? { task_id: fields.task_id } : {}),
    pending_action: fields.pending_action ?? null,
    pending_action_revision: revision,
  };
  const withSession = { ...state, sessions: { ...state.sessions, [sessionId]: session } };
  const next = noteEpoch(withSession, revision ? revision.epoch : null);
  return { state: next, applied: true, reason: "applied" };
}

/**
 * Applies a session row from REST (`GET /tasks/{id}/task-sessions`, `GET /task-sessions/{id}`,
 * `POST .../task-sessions`). Descriptive fields (state, agent, ...) always take the server's
 * value; the pending fields go through the revision rules.
 * @param {StoreState} state
 * @param {Session} row
 * @returns {StoreState}
 */
export function applySessionRow(state, row) {
  const current = state.sessions[row.id];
  const { pending_action: _pa, pending_action_revision: _par, ...plain } = row;
  /** @type {Session} */
  const merged = {
    pending_action: null,
    pending_action_revision: null,
    ...current,
    ...plain,
  };
  if (current) {
    merged.pending_action = current.pending_action ?? null;
    merged.pending_action_revision = current.pending_action_revision ?? null;
  }
  const base = { ...state, sessions: { ...state.sessions, [row.id]: merged } };
  return applyPendingProjection(base, row.id, row).state;
}

/**
 * Applies a full session list for one task.
 * @param {StoreState} state
 * @param {Session[]} rows
 * @returns {StoreState}
 */
export function applySessionList(state, rows) {
  return rows.reduce((acc, row) => applySessionRow(acc, row), state);
}

/**
 * `session.state_changed`: `{session_id, task_id, new_state}` (or `state`).
 * @param {StoreState} state
 * @param {{session_id?: string, task_id?: string, new_state?: string, state?: string}} payload
 * @returns {StoreState}
 */
function applySessionState(state, payload) {
  const id = payload.session_id;
  const newState = payload.new_state ?? payload.state;
  if (!id || !newState) return state;
  const current = state.sessions[id] ?? { id, pending_action: null, pending_action_revision: null };
  const taskId = payload.task_id ? { task_id: payload.task_id } : {};
  const session = { ...current, state: newState, ...taskId };
  return { ...state, sessions: { ...state.sessions, [id]: session } };
}

/**
 * Records what the store holds as a task-list read is sent, so its response can tell which
 * summaries a WebSocket event delivered while it was in flight.
 * @param {StoreState} state
 * @returns {ReadStart}
 */
export function beginTaskRead(state) {
  /** @type {Record<string, number | null>} */
  const summaryRevisions = {};
  for (const id of Object.keys(state.tasks)) summaryRevisions[id] = null;
  for (const [id, summary] of Object.entries(state.summaries)) {
    summaryRevisions[id] = summary.revision;
  }
  return { summaryRevisions, taskIds: Object.keys(state.tasks) };
}

/**
 * True when a live summary arrived after `start` was taken.
 * @param {StoreState} state
 * @param {ReadStart} start
 * @param {string} taskId
 */
function hasNewerLiveSummary(state, start, taskId) {
  const live = state.summaries[taskId];
  if (!live) return false;
  const atStart = start.summaryRevisions[taskId];
  if (atStart === undefined || atStart === null) return true;
  return live.revision > atStart;
}

/**
 * @param {unknown} summary
 * @returns {summary is StatusSummary}
 */
function isSummary(summary) {
  return !!summary && typeof summary === "object" &&
    typeof (/** @type {Record<string, unknown>} */ (summary).revision) === "number";
}

/**
 * Applies the tasks of a read (`/boot`, `GET /tasks`, `/workflow/snapshot`, `GET /tasks/{id}`).
 * Per task: an invalidated summary is dropped unless a newer live summary arrived while the read
 * was in flight; a summary is applied only if its revision is not older than the cached one; an
 * omitted summary keeps the cache. With `complete`, tasks the store knew when the read was sent
 * and the response lacks are removed (tasks created meanwhile are kept).
 * @param {StoreState} state
 * @param {Array<Task & {status_summary?: unknown, status_summary_invalidated?: boolean}>} rows
 * @param {ReadStart} start
 * @param {{complete?: boolean}} [options]
 * @returns {StoreState}
 */
export function applyTaskRead(state, rows, start, options = {}) {
  const tasks = { ...state.tasks };
  const summaries = { ...state.summaries };
  for (const row of rows) {
    const { status_summary: summary, status_summary_invalidated: invalidated, ...task } = row;
    tasks[task.id] = task;
    if (invalidated === true) {
      if (!hasNewerLiveSummary(state, start, task.id)) delete summaries[task.id];
    } else if (isSummary(summary)) {
      const cached = summaries[task.id];
      if (!cached || summary.revision >= cached.revision) summaries[task.id] = summary;
    }
  }
  if (options.complete) {
    const seen = new Set(rows.map((r) => r.id));
    for (const id of start.taskIds) {
      if (!seen.has(id)) {
        delete tasks[id];
        delete summaries[id];
      }
    }
  }
  return { ...state, tasks, summaries };
}

/**
 * Applies a `/boot` body `{tasks, epoch}`: the epoch first, then the tasks.
 * @param {StoreState} state
 * @param {{tasks?: any[], epoch?: unknown}} body
 * @param {ReadStart} start
 * @returns {StoreState}
 */
export function applyBoot(state, body, start) {
  return applyTaskRead(noteEpoch(state, body.epoch), body.tasks ?? [], start, { complete: true });
}

/**
 * `task.status_summary.updated`: `{task_id, status_summary}`; an older revision is ignored.
 * @param {StoreState} state
 * @param {{task_id?: string, status_summary?: unknown}} payload
 * @returns {Outcome}
 */
export function applySummaryUpdate(state, payload) {
  const taskId = payload.task_id;
  const summary = payload.status_summary;
  if (!taskId || !isSummary(summary)) return rejected(state, "malformed");
  const cached = state.summaries[taskId];
  if (cached && summary.revision < cached.revision) return rejected(state, "older-revision");
  return {
    state: { ...state, summaries: { ...state.summaries, [taskId]: summary } },
    applied: true,
    reason: "applied",
  };
}

/**
 * Routes one WebSocket notification to the rules above. Unknown actions leave the state alone.
 * @param {StoreState} state
 * @param {string} action
 * @param {any} payload
 * @returns {StoreState}
 */
export function applyNotification(state, action, payload) {
  if (!payload || typeof payload !== "object") return state;
  switch (action) {
    case "session.message.added":
    case "session.message.updated":
    case "session.message.deleted":
      if (!payload.session_id) return state;
      return applyPendingProjection(state, payload.session_id, payload).state;
    case "session.state_changed":
      return applySessionState(state, payload);
    case "task.status_summary.updated":
      return applySummaryUpdate(state, payload).state;
    default:
      return state;
  }
}

/**
 * The pending action a task advertises: its summary's, or the legacy fields when no summary is
 * cached (the coarse fallback an invalidated summary exposes).
 * @param {StoreState} state
 * @param {string} taskId
 * @returns {string | null}
 */
export function taskPendingAction(state, taskId) {
  const summary = state.summaries[taskId];
  if (summary) return typeof summary.pending_action === "string" ? summary.pending_action : null;
  const task = state.tasks[taskId];
  if (!task) return null;
  return task.task_pending_action ?? task.primary_session_pending_action ?? null;
}

/**
 * The sessions of one task, oldest first.
 * @param {StoreState} state
 * @param {string} taskId
 * @returns {Session[]}
 */
export function sessionsOfTask(state, taskId) {
  return Object.values(state.sessions)
    .filter((s) => s.task_id === taskId)
    .sort((a, b) => String(a.created_at ?? "").localeCompare(String(b.created_at ?? "")) ||
      a.id.localeCompare(b.id));
}

/** Observable wrapper: holds the state and tells subscribers after each change. */
export class ClientStore {
  /** @param {StoreState} [initial] */
  constructor(initial = emptyState()) {
    /** @type {StoreState} */
    this.state = initial;
    /** @type {Set<(state: StoreState) => void>} */
    this.listeners = new Set();
  }

  /**
   * @param {(state: StoreState) => void} listener
   * @returns {() => void} unsubscribe
   */
  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Replaces the state through a pure reducer and notifies when it changed.
   * @param {(state: StoreState) => StoreState} reducer
   */
  update(reducer) {
    const next = reducer(this.state);
    if (next === this.state) return;
    this.state = next;
    for (const listener of [...this.listeners]) listener(next);
  }

  /** @returns {ReadStart} */
  beginTaskRead() {
    return beginTaskRead(this.state);
  }

  /** @param {string} action @param {unknown} payload */
  notify(action, payload) {
    this.update((s) => applyNotification(s, action, payload));
  }
}
