// The session transcript model: turns from /turns and messages from /messages, kept current by
// session.message.* and session.turn.* notifications. Pure functions over {turns, messages},
// imported by the session view and the tests.

/**
 * @typedef {{id: string, session_id?: string, turn_id?: string | null, author_type?: string,
 *   type?: string, content?: string, metadata?: Record<string, any> | null, created_at?: string,
 *   [key: string]: unknown}} Message
 * @typedef {{id: string, session_id?: string, started_at?: string, completed_at?: string | null,
 *   created_at?: string, metadata?: Record<string, any> | null, [key: string]: unknown}} Turn
 * @typedef {{turns: Turn[], messages: Message[]}} Transcript
 * @typedef {{kind: "turn-start", turn: Turn} | {kind: "turn-end", turn: Turn}
 *   | {kind: "message", message: Message}} TranscriptItem
 */

/** @returns {Transcript} */
export function emptyTranscript() {
  return { turns: [], messages: [] };
}

/**
 * Notification payloads name the message id `id` (Clarion) or `message_id` (kandev).
 * @param {Record<string, any>} payload
 * @returns {Message | null}
 */
export function messageFromPayload(payload) {
  const id = payload.id ?? payload.message_id;
  if (typeof id !== "string") return null;
  const { pending_action: _p, pending_action_revision: _r, message_id: _m, ...rest } = payload;
  return { ...rest, id };
}

const byKeys = (/** @type {string[]} */ keys) =>
  (/** @type {Record<string, any>} */ a, /** @type {Record<string, any>} */ b) => {
    for (const k of keys) {
      const c = String(a[k] ?? "").localeCompare(String(b[k] ?? ""));
      if (c !== 0) return c;
    }
    return 0;
  };

const turnOrder = byKeys(["started_at", "created_at", "id"]);
const messageOrder = byKeys(["created_at", "id"]);

/**
 * @param {Transcript} t
 * @param {Message} message
 * @returns {Transcript} with the message added or replaced (a partial update keeps old fields)
 */
export function upsertMessage(t, message) {
  const index = t.messages.findIndex((m) => m.id === message.id);
  const messages = [...t.messages];
  if (index >= 0) messages[index] = { ...messages[index], ...message };
  else messages.push(message);
  messages.sort(messageOrder);
  return { ...t, messages };
}

/**
 * @param {Transcript} t
 * @param {string} messageId
 * @returns {Transcript}
 */
function removeMessage(t, messageId) {
  return { ...t, messages: t.messages.filter((m) => m.id !== messageId) };
}

/**
 * @param {Transcript} t
 * @param {Turn} turn
 * @returns {Transcript}
 */
export function upsertTurn(t, turn) {
  const index = t.turns.findIndex((x) => x.id === turn.id);
  const turns = [...t.turns];
  if (index >= 0) turns[index] = { ...turns[index], ...turn };
  else turns.push(turn);
  turns.sort(turnOrder);
  return { ...t, turns };
}

/**
 * Applies one notification for this session; others are ignored.
 * @param {Transcript} t
 * @param {string} sessionId
 * @param {string} action
 * @param {Record<string, any>} payload
 * @returns {Transcript}
 */
export function applyTranscriptEvent(t, sessionId, action, payload) {
  if (!payload || payload.session_id !== sessionId) return t;
  if (action === "session.turn.started" || action === "session.turn.completed") {
    return typeof payload.id === "string" ? upsertTurn(t, /** @type {Turn} */ (payload)) : t;
  }
  const message = messageFromPayload(payload);
  if (!message) return t;
  if (action === "session.message.deleted") return removeMessage(t, message.id);
  if (action === "session.message.added" || action === "session.message.updated") {
    return upsertMessage(t, message);
  }
  return t;
}

/**
 * The transcript in reading order: each turn's start boundary, its messages, its end boundary
 * when completed; messages of turns not (yet) listed come last.
 * @param {Transcript} t
 * @returns {TranscriptItem[]}
 */
export function transcriptItems(t) {
  /** @type {Map<string, Message[]>} */
  const byTurn = new Map();
  /** @type {Message[]} */
  const loose = [];
  const turnIds = new Set(t.turns.map((x) => x.id));
  for (const m of t.messages) {
    if (m.turn_id && turnIds.has(m.turn_id)) {
      const list = byTurn.get(m.turn_id) ?? [];
      list.push(m);
      byTurn.set(m.turn_id, list);
    } else {
      loose.push(m);
    }
  }
  /** @type {TranscriptItem[]} */
  const items = [];
  for (const turn of t.turns) {
    items.push({ kind: "turn-start", turn });
    for (const message of byTurn.get(turn.id) ?? []) items.push({ kind: "message", message });
    if (turn.completed_at) items.push({ kind: "turn-end", turn });
  }
  for (const message of loose) items.push({ kind: "message", message });
  return items;
}

const TERMINAL_STATUSES = new Set(["answered", "rejected", "expired", "cancelled"]);

/**
 * Pending ids of clarification bundles that may still be active, newest first. A bundle whose
 * every row carries a terminal status is skipped without asking the server; the rest are only
 * candidates: the server's bundle state decides.
 * @param {Message[]} messages
 * @returns {string[]}
 */
export function candidateBundles(messages) {
  /** @type {Map<string, {newest: string, open: boolean}>} */
  const bundles = new Map();
  for (const m of messages) {
    if (m.type !== "clarification_request") continue;
    const pendingId = m.metadata?.pending_id;
    if (typeof pendingId !== "string") continue;
    const status = String(m.metadata?.status ?? "");
    const entry = bundles.get(pendingId) ?? { newest: "", open: false };
    const key = `${m.created_at ?? ""}\u0000${m.id}`;
    if (key > entry.newest) entry.newest = key;
    if (!TERMINAL_STATUSES.has(status)) entry.open = true;
    bundles.set(pendingId, entry);
  }
  return [...bundles.entries()]
    .filter(([, e]) => e.open)
    .sort((a, b) => b[1].newest.localeCompare(a[1].newest))
    .map(([id]) => id);
}

/**
 * The permission request waiting for a decision, if any: the newest `permission_request` row,
 * when its status is pending (an older pending one is history: the server settles every
 * request when its agent call ends, and the newest decides, as in the pending rule).
 * @param {Message[]} messages
 * @returns {Message | null}
 */
export function pendingPermission(messages) {
  /** @type {Message | null} */
  let newest = null;
  for (const m of messages) {
    if (m.type !== "permission_request") continue;
    if (!newest || `${m.created_at ?? ""}\u0000${m.id}` > `${newest.created_at ?? ""}\u0000${newest.id}`) newest = m;
  }
  if (!newest) return null;
  const status = String(newest.metadata?.status ?? "pending");
  return status === "pending" || status === "" ? newest : null;
}

/**
 * The readable parts of an `error` row: its first paragraph is the reason (one sentence),
 * anything after it the agent's stderr.
 * @param {string} content
 * @returns {{reason: string, detail: string}}
 */
export function splitError(content) {
  const at = content.indexOf("\n\n");
  if (at < 0) return { reason: content, detail: "" };
  return { reason: content.slice(0, at), detail: content.slice(at + 2) };
}

/**
 * The text of agent messages not in `known` yet (adding them to it), joined; "" when none. The
 * session view reads it out for messages that arrived live.
 * @param {Set<string>} known
 * @param {Message[]} messages
 */
export function freshAgentText(known, messages) {
  const fresh = [];
  for (const m of messages) {
    if (known.has(m.id)) continue;
    known.add(m.id);
    if (m.author_type === "agent" && (m.type ?? "message") === "message" && m.content) fresh.push(String(m.content));
  }
  return fresh.join(" ");
}
