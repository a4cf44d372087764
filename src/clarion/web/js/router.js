// Hash routes: `#/` (board), `#/tasks/<id>` (task view), `#/tasks/<id>/sessions/<sid>` (session
// view), `#/tasks/<id>/changes` (the task's Changes view), `#/inbox`. Pure parse and format,
// imported by main.js and the tests.

/**
 * @typedef {{name: "board"} | {name: "inbox"} | {name: "task", taskId: string}
 *   | {name: "session", taskId: string, sessionId: string}
 *   | {name: "changes", taskId: string}} Route
 */

/**
 * @param {string} hash location.hash, with or without the leading `#`
 * @returns {Route}
 */
export function parseRoute(hash) {
  const parts = hash.replace(/^#/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "inbox") return { name: "inbox" };
  if (parts[0] === "tasks" && parts[1]) {
    if (parts[2] === "sessions" && parts[3]) {
      return { name: "session", taskId: parts[1], sessionId: parts[3] };
    }
    if (parts[2] === "changes") return { name: "changes", taskId: parts[1] };
    return { name: "task", taskId: parts[1] };
  }
  return { name: "board" };
}

/**
 * @param {Route} route
 * @returns {string} a hash starting with `#/`
 */
export function formatRoute(route) {
  const enc = encodeURIComponent;
  if (route.name === "inbox") return "#/inbox";
  if (route.name === "task") return `#/tasks/${enc(route.taskId)}`;
  if (route.name === "changes") return `#/tasks/${enc(route.taskId)}/changes`;
  if (route.name === "session") {
    return `#/tasks/${enc(route.taskId)}/sessions/${enc(route.sessionId)}`;
  }
  return "#/";
}
