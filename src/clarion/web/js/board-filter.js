// What the board shows: tasks whose title or description holds the search words, in the chosen
// state (waiting for the person or not) and workspace. Pure; imported by board.js and main.js.

/**
 * @typedef {{text: string, state: "" | "waiting" | "not-waiting", workspace: string}} BoardFilter
 */

/** @returns {BoardFilter} */
export function noFilter() {
  return { text: "", state: "", workspace: "" };
}

/**
 * @param {Record<string, any>} task
 * @param {string | null} pending the task's pending action, if any
 * @param {BoardFilter} filter
 */
export function taskMatches(task, pending, filter) {
  if (filter.state === "waiting" && !pending) return false;
  if (filter.state === "not-waiting" && pending) return false;
  if (filter.workspace && String(task.workspace ?? "") !== filter.workspace) return false;
  const words = filter.text.toLowerCase().split(/\s+/).filter(Boolean);
  const haystack = `${task.title ?? ""}\n${task.description ?? ""}`.toLowerCase();
  return words.every((w) => haystack.includes(w));
}

/**
 * The workspaces the tasks belong to, sorted (the workspace choice shows only with two or more).
 * @param {Array<Record<string, any>>} tasks
 */
export function workspacesOf(tasks) {
  return [...new Set(tasks.map((t) => String(t.workspace ?? "")).filter(Boolean))].sort();
}
