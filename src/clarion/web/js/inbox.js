// The inbox model: what is waiting for the person (GET /inbox items), the tab title with its
// count, which items are new since the last read, and the words of a browser notification.
// Pure; imported by inbox-controller.js and the tests.

/**
 * @typedef {{kind: "clarification" | "permission", id: string, task: {id: string, title: string},
 *   session_id: string, state: string, created_at: string, questions?: any[], tool_call?: any,
 *   options?: any[], context?: string | null}} InboxItem
 */

/**
 * "(2) Clarion" while two items wait, else "Clarion".
 * @param {number} count
 * @param {string} [base]
 */
export function titleWithCount(count, base = "Clarion") {
  return count > 0 ? `(${count}) ${base}` : base;
}

/**
 * Items whose ids were not in `known`.
 * @param {Set<string>} known
 * @param {InboxItem[]} items
 */
export function newItems(known, items) {
  return items.filter((item) => !known.has(item.id));
}

/**
 * The title and body of the notification for one new item.
 * @param {InboxItem} item
 * @returns {{title: string, body: string}}
 */
export function notificationText(item) {
  const task = item.task?.title || "a task";
  if (item.kind === "permission") {
    return { title: `Agent asks permission in ${task}`, body: String(item.tool_call?.title ?? "A tool call needs your decision") };
  }
  const first = item.questions?.[0];
  return { title: `Agent asks in ${task}`, body: String(first?.prompt ?? first?.title ?? "A question is waiting for you") };
}
