// Sessions in a person's words: states ("Waiting for you", not WAITING_FOR_INPUT), which
// session of its task one is ("Session 2 · started 10:42"), and what the actions may do in
// each state. Pure; imported by the task and session views and the tests.

import { shortTime } from "./dom.js";

/** @type {Record<string, string>} */
const STATE_WORDS = {
  CREATED: "Created",
  STARTING: "Starting",
  RUNNING: "Working",
  IDLE: "Idle",
  WAITING_FOR_INPUT: "Waiting for you",
  COMPLETED: "Finished",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};

/** States after which a session takes no prompt and no action. */
export const FINISHED_STATES = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
/** States with a turn to cancel. */
const BUSY_STATES = new Set(["STARTING", "RUNNING", "WAITING_FOR_INPUT"]);

/** @param {unknown} state */
export function stateWords(state) {
  const key = String(state ?? "");
  return STATE_WORDS[key] ?? key.toLowerCase().replace(/_/g, " ");
}

/** @param {unknown} state */
export function isFinished(state) {
  return FINISHED_STATES.has(String(state ?? ""));
}

/** @param {unknown} state */
export function canCancel(state) {
  return BUSY_STATES.has(String(state ?? ""));
}

/**
 * "Session 2 · started 10:42": its place among the task's sessions (oldest first) and when it
 * started, so two sessions with the same agent can be told apart.
 * @param {Array<{id: string, created_at?: unknown}>} sessions the task's sessions, oldest first
 * @param {string} sessionId
 */
export function sessionName(sessions, sessionId) {
  const index = sessions.findIndex((s) => s.id === sessionId);
  if (index < 0) return "Session";
  const started = shortTime(typeof sessions[index].created_at === "string" ? String(sessions[index].created_at) : "");
  return `Session ${index + 1}${started ? ` · started ${started}` : ""}`;
}
