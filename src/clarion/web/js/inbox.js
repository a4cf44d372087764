// The inbox model: what is waiting for the person (GET /inbox items), the tab title with its
// count, which items are new since the last read, and the words of a browser notification.
// Pure; imported by inbox-controller.js and the tests.

/**
 * @typedef {{kind: "clarification" | "permission", id: string, task: {id: string, title: string},
 *   session_id: string, state: string, created_at: string, questions?: any[], tool_call?: any,
 *   options?: any[], context?: string | null, task_description?: string,
 *   last_agent_message?: string | null, expires_at?: string | null,
 *   on_expiry?: string | null, escalated_to?: string[] | null}} InboxItem
 */

/**
 * The order a person works through: items with a deadline first, soonest first; then the rest,
 * newest first (a new item appears at the top, in sight).
 * @param {InboxItem[]} items
 * @returns {InboxItem[]}
 */
export function inboxOrder(items) {
  const at = (/** @type {string | null | undefined} */ iso) => (iso ? Date.parse(iso) : NaN);
  return [...items].sort((a, b) => {
    const ea = at(a.expires_at), eb = at(b.expires_at);
    if (!Number.isNaN(ea) || !Number.isNaN(eb)) {
      if (Number.isNaN(ea)) return 1;
      if (Number.isNaN(eb)) return -1;
      if (ea !== eb) return ea - eb;
    }
    return at(b.created_at) - at(a.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}

/**
 * A waiting policy's deadline in words: "expires in 3 h, then Skip", or "expires in 3 min, then
 * the default answer: SQLite" naming the options an expiry chooses (null without one). An
 * inbox item or a bundle read.
 * @param {{expires_at?: string | null, on_expiry?: string | null, questions?: any[]}} item
 * @param {number} now milliseconds since the epoch
 */
export function deadlineWords(item, now) {
  if (!item.expires_at) return null;
  const left = Math.round((Date.parse(item.expires_at) - now) / 1000);
  const defaults = (item.questions ?? []).flatMap((/** @type {any} */ q) =>
    (Array.isArray(q?.options) ? q.options : []).filter((/** @type {any} */ o) => o?.default === true)
      .map((/** @type {any} */ o) => String(o.label ?? o.option_id)));
  const then = item.on_expiry === "default"
    ? `the default answer${defaults.length ? `: ${defaults.join(", ")}` : ""}` : "Skip";
  if (Number.isNaN(left)) return null;
  if (left <= 0) return `expires now, then ${then}`;
  /** @type {[string, number][]} */
  const units = [["d", 86400], ["h", 3600], ["min", 60]];
  const unit = units.find(([, size]) => left >= size);
  const amount = unit ? `${Math.round(left / unit[1])} ${unit[0]}` : `${left} s`;
  return `expires in ${amount}, then ${then}`;
}

/**
 * "Escalated to bob" when the waiting policy asked more people (null otherwise).
 * @param {{escalated_to?: string[] | null}} item
 */
export function escalationWords(item) {
  const users = item.escalated_to ?? [];
  return users.length ? `Escalated to ${users.join(", ")}` : null;
}

/**
 * One line for the compact list: what is asked, in few words.
 * @param {InboxItem} item
 */
export function itemSummary(item) {
  if (item.kind === "permission") return String(item.tool_call?.title ?? "A tool call needs your decision");
  const questions = item.questions ?? [];
  const first = questions[0];
  const text = String(first?.prompt ?? first?.title ?? "A question");
  return questions.length > 1 ? `${text} (+${questions.length - 1} more)` : text;
}

/**
 * The item's state in words.
 * @param {InboxItem} item
 */
export function itemStateWords(item) {
  if (item.kind === "permission") return "Needs a decision";
  return item.state === "active_detached" ? "Agent paused, resumes on answer" : "Agent waiting";
}

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
