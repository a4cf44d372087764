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
 *   | {kind: "message", message: Message, answeredLater?: boolean}
 *   | {kind: "answer", message: Message}} TranscriptItem
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
  // A question answered after its turn ended (a detached answer) reads where it happened: after
  // what the agent said meanwhile, before the turn that resumed with it.
  const completed = new Map(t.turns.map((x) => [x.id, String(x.completed_at ?? "")]));
  /** @type {Message[]} */
  const late = t.messages.filter((m) => m.type === "clarification_request" && ANSWERED.has(String(m.metadata?.status ?? ""))
    && m.turn_id && completed.get(m.turn_id) && String(m.updated_at ?? "") > String(completed.get(m.turn_id)))
    .sort(byKeys(["updated_at", "id"]));
  const lateIds = new Set(late.map((m) => m.id));
  /** @type {TranscriptItem[]} */
  const items = [];
  const flushLate = (/** @type {string | null} */ before) => {
    while (late.length && (before === null || String(late[0].updated_at ?? "") <= before)) {
      items.push({ kind: "answer", message: /** @type {Message} */ (late.shift()) });
    }
  };
  for (const turn of t.turns) {
    flushLate(String(turn.started_at ?? turn.created_at ?? ""));
    // An agent start is one line: its own start and end boundaries read as a turn before the first.
    const lifecycle = turn.metadata?.lifecycle_only === true;
    items.push({ kind: "turn-start", turn });
    for (const message of byTurn.get(turn.id) ?? []) {
      items.push(lateIds.has(message.id) ? { kind: "message", message, answeredLater: true } : { kind: "message", message });
    }
    if (turn.completed_at && !lifecycle) items.push({ kind: "turn-end", turn });
  }
  flushLate(null);
  for (const message of loose) items.push({ kind: "message", message });
  return items;
}

const TERMINAL_STATUSES = new Set(["answered", "rejected", "expired", "cancelled"]);
/** Statuses under which a question row carries the person's answer. */
const ANSWERED = new Set(["answered", "rejected"]);

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
  content = readableAgentText(content);
  const at = content.indexOf("\n\n");
  if (at < 0) return { reason: content, detail: "" };
  return { reason: content.slice(0, at), detail: content.slice(at + 2) };
}

/**
 * Technical failures an agent reports in its own words, and what they mean for a person. A
 * restart cuts the agent's wait, never the question: it stays open and answerable, and a new
 * message would set it aside, so the words say to answer it.
 */
const RESTART_WORDS = "the server restarted while the agent waited. The question is still open: " +
  "answer it and the agent goes on with your answer (a new message would set it aside)";
const TECHNICAL = [
  { pattern: /Could not ask the question: SSE stream ended without a response\.?/i,
    words: `The agent's wait for your answer was cut short: ${RESTART_WORDS}.` },
  { pattern: /SSE stream ended without a response/i,
    words: `the connection between the agent and Clarion was cut: ${RESTART_WORDS}` },
  { pattern: /Server disconnected without sending a response|Connection (refused|reset)/i,
    words: `the agent could not reach Clarion: ${RESTART_WORDS}` },
];

/**
 * Whether an agent's text is only a known technical failure (nothing a person needs to read as
 * context beside the question it is about).
 * @param {string} text
 */
export function isTechnicalFailure(text) {
  return /^\s*Could not ask the question:/i.test(text) && TECHNICAL.some(({ pattern }) => pattern.test(text));
}

/**
 * An agent's text with a known technical failure replaced by what it means for the person.
 * @param {string} text
 */
export function readableAgentText(text) {
  let out = text;
  for (const { pattern, words } of TECHNICAL) out = out.replace(pattern, words);
  return out;
}

/**
 * An agent reply that carries JSON (the built-in agent's "You answered: {...}") in words:
 * "You answered: db: PostgreSQL; language: Go". Other text is returned as it is.
 * @param {string} text
 */
export function readableReply(text) {
  const at = text.search(/[[{]/);
  if (at < 0) return text;
  /** @type {any} */
  let value;
  try {
    value = JSON.parse(text.slice(at));
  } catch {
    return text;
  }
  if (!value || typeof value !== "object") return text;
  // The skip envelope ({"rejected": true, "reject_reason": ...}) in words: "You skipped the
  // question (User skipped)", never "You answered: rejected: true".
  if (!Array.isArray(value) && value.rejected === true) {
    const reason = typeof value.reject_reason === "string" ? value.reject_reason.trim() : "";
    const lead = text.slice(0, at).replace(/\bYou answered:\s*$/, "").trimEnd();
    return `${lead ? `${lead} ` : ""}You skipped the question${reason ? ` (${reason})` : ""}.`;
  }
  const word = (/** @type {any} */ v) => {
    if (v && typeof v === "object" && (Array.isArray(v.selected_options) || typeof v.custom_text === "string")) {
      const picked = [...(v.selected_options ?? []), ...(v.custom_text ? [v.custom_text] : [])];
      return picked.length ? picked.join(", ") : "no answer";
    }
    return typeof v === "string" ? v : JSON.stringify(v);
  };
  const parts = Array.isArray(value) ? value.map(word) : Object.entries(value).map(([k, v]) => `${k}: ${word(v)}`);
  return `${text.slice(0, at)}${parts.join("; ")}`;
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
