// The review a person gathers on the Changes view: line comments and a summary, kept per task in
// localStorage until sent, and the words the view shows for files, totals and a refused review.
// Pure (no DOM); imported by changes-view.js and the unit tests.

/**
 * @typedef {{id: string, path: string, line: number | null, side: "new" | "old", body: string}} DraftComment
 * @typedef {{comments: DraftComment[], summary: string}} Draft
 * @typedef {{path: string, line?: number, body: string}} WireComment
 * @typedef {{getItem(k: string): string | null, setItem(k: string, v: string): void,
 *   removeItem(k: string): void}} KeyValue
 */

const KEY = (/** @type {string} */ taskId) => `clarion.review.${taskId}`;

/** A removed line has no number in the new file: the comment says which line it means. */
export const REMOVED_LINE = "(on a removed line) ";

/** @returns {Draft} */
export function emptyDraft() {
  return { comments: [], summary: "" };
}

/**
 * The task's unsent review from storage; anything unreadable is an empty draft.
 * @param {KeyValue | null} storage
 * @param {string} taskId
 * @returns {Draft}
 */
export function loadDraft(storage, taskId) {
  try {
    const raw = storage?.getItem(KEY(taskId));
    if (!raw) return emptyDraft();
    const parsed = JSON.parse(raw);
    const comments = Array.isArray(parsed?.comments) ? parsed.comments.filter(isComment) : [];
    return { comments, summary: typeof parsed?.summary === "string" ? parsed.summary : "" };
  } catch {
    return emptyDraft();
  }
}

/** @param {any} c @returns {c is DraftComment} */
function isComment(c) {
  return c && typeof c.id === "string" && typeof c.path === "string" && typeof c.body === "string"
    && (c.line === null || Number.isInteger(c.line)) && (c.side === "new" || c.side === "old");
}

/**
 * @param {KeyValue | null} storage
 * @param {string} taskId
 * @param {Draft} draft
 */
export function saveDraft(storage, taskId, draft) {
  try {
    if (!draft.comments.length && !draft.summary.trim()) storage?.removeItem(KEY(taskId));
    else storage?.setItem(KEY(taskId), JSON.stringify(draft));
  } catch {
    // storage full or refused: the draft still lives in the page
  }
}

/**
 * The draft with one more comment (blank text adds nothing).
 * @param {Draft} draft
 * @param {{path: string, line: number | null, side: "new" | "old", body: string}} comment
 * @param {string} id
 * @returns {Draft}
 */
export function addComment(draft, comment, id) {
  const body = comment.body.trim();
  if (!body) return draft;
  return { ...draft, comments: [...draft.comments, { ...comment, body, id }] };
}

/** @param {Draft} draft @param {string} id @returns {Draft} */
export function removeComment(draft, id) {
  return { ...draft, comments: draft.comments.filter((c) => c.id !== id) };
}

/**
 * The comments on one line of one side of a file, oldest first.
 * @param {Draft} draft @param {string} path @param {number | null} line @param {"new" | "old"} side
 */
export function commentsAt(draft, path, line, side) {
  return draft.comments.filter((c) => c.path === path && c.line === line && c.side === side);
}

/** Whether the draft can be sent: at least one comment or a summary. @param {Draft} draft */
export function canSend(draft) {
  return draft.comments.length > 0 || draft.summary.trim().length > 0;
}

/**
 * The POST /tasks/{id}/review body: comments in the order they were written.
 * @param {Draft} draft
 * @returns {{comments: WireComment[], summary?: string}}
 */
export function reviewBody(draft) {
  const comments = draft.comments.map((c) => {
    /** @type {WireComment} */
    const wire = { path: c.path, body: c.side === "old" ? REMOVED_LINE + c.body : c.body };
    if (c.line !== null) wire.line = c.line;
    return wire;
  });
  const summary = draft.summary.trim();
  return summary ? { comments, summary } : { comments };
}

/**
 * Why a review was not sent, in words; the draft is kept in every case.
 * @param {any} err an ApiError (status, code, message) or anything thrown
 */
export function reviewErrorWords(err) {
  if (err?.code === "session_busy") {
    return "The agent is busy: a turn is running or a question waits for an answer. "
      + "Your review is kept; send it again once the agent is idle.";
  }
  if (err?.status === 404) return "This task has no worktree, so there is nothing to review.";
  if (err?.status === 0) return "Cannot reach the Clarion server; your review is kept. Try again.";
  return `The review was not sent: ${String(err?.message ?? err)}`;
}

/** @param {{additions?: number, deletions?: number, binary?: boolean}} file */
export function countsWords(file) {
  if (file.binary) return "binary";
  return `+${Number(file.additions ?? 0)} −${Number(file.deletions ?? 0)}`;
}

/** "3 files changed, +10 −2" @param {{files?: any[], total_additions?: number, total_deletions?: number}} body */
export function totalsWords(body) {
  const n = body.files?.length ?? 0;
  if (!n) return "No changes yet";
  return `${n} ${n === 1 ? "file" : "files"} changed, +${Number(body.total_additions ?? 0)} −${Number(body.total_deletions ?? 0)}`;
}

/** "2 comments" @param {Draft} draft */
export function draftWords(draft) {
  const n = draft.comments.length;
  if (!n) return draft.summary.trim() ? "A summary, no line comments" : "No comments yet: click a line to comment";
  return `${n} ${n === 1 ? "comment" : "comments"}`;
}
