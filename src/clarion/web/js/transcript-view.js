// How each transcript item reads: turn boundaries, prompts and agent text, thoughts, tool calls,
// agent errors, permission requests and questions, with the person's own answer under each
// question (readable, with when it was given). Pure DOM building; imported by session-view.js.

import { h } from "./dom.js";
import { humanError } from "./errors.js";
import { renderMarkdown } from "./markdown.js";
import { fullStamp, stamp } from "./time-words.js";
import { readableAgentText, readableReply, splitError } from "./transcript.js";

/** @typedef {import("./transcript.js").Message} Message */
/** @typedef {import("./transcript.js").TranscriptItem} TranscriptItem */

/**
 * @param {TranscriptItem} item
 * @param {ReadonlySet<string>} [superseded] pending ids of questions a new message set aside
 */
export function renderItem(item, superseded = new Set()) {
  if (item.kind === "answer") {
    // A detached answer, where it happened in time (after the turn that asked had ended).
    const m = item.message;
    const who = byPolicy(m) ? "clarion" : "user";
    return h("div", { class: `msg msg-late-answer author-${who}`, testid: `late-answer-${m.id}`, dataset: { author: who } },
      speaker(who),
      h("span", { class: "late-question", text: String(m.metadata?.question?.title || m.content || "") }),
      ownAnswer(m));
  }
  if (item.kind !== "message") {
    const t = item.turn;
    const lifecycle = t.metadata?.lifecycle_only === true;
    // A lifecycle turn records an agent start, or (with `phase`) an agent that failed.
    const failed = lifecycle && typeof t.metadata?.phase === "string";
    const text = item.kind === "turn-start"
      ? (failed ? "Agent failed" : lifecycle ? "Agent started" : "Turn started")
      : (t.metadata?.interrupted ? "Turn interrupted" : "Turn completed");
    const when = String((item.kind === "turn-start" ? t.started_at : t.completed_at) ?? "");
    const time = stamp(when);
    return h("div", { class: `turn-boundary ${item.kind}${lifecycle ? " lifecycle" : ""}`,
      testid: `${item.kind}-${t.id}` }, text,
    time ? h("time", { datetime: when, title: fullStamp(when), text: ` · ${time}` }) : null);
  }
  const m = item.message;
  const type = String(m.type ?? "message");
  const author = String(m.author_type ?? "agent");
  const attrs = { class: `msg msg-${type} author-${author}`, testid: `message-${m.id}`,
    dataset: { type, author } };
  const content = String(m.content ?? "");
  const answeredLater = item.answeredLater === true;
  if (type === "thought") {
    return h("details", attrs, h("summary", {}, "Thought"), h("div", { class: "content", text: content }));
  }
  if (type === "tool_call") {
    const title = m.metadata?.title ?? m.metadata?.tool_name ?? "Tool call";
    // The built-in agent's tool call content is often just the tool name again.
    return h("div", attrs, h("span", { class: "tool-title", text: String(title) }),
      content && content !== String(title) ? h("pre", { class: "content", text: content }) : null);
  }
  if (type === "error") {
    // An agent failure: the reason always visible, the agent's stderr one click away.
    const { reason, detail } = splitError(content);
    return h("div", { ...attrs, role: "alert" },
      h("strong", { class: "error-reason", testid: "error-reason", text: reason }),
      detail ? h("details", {}, h("summary", {}, "Agent output"),
        h("pre", { class: "content", testid: "error-detail", text: detail })) : null);
  }
  if (type === "permission_request") {
    const status = String(m.metadata?.status || "pending");
    const decision = m.metadata?.decision;
    const kind = String(m.metadata?.tool_call?.kind ?? "");
    return h("div", { ...attrs, dataset: { ...attrs.dataset, status } },
      h("span", { class: "badge", testid: "permission-status", text: status }),
      h("span", { class: "content", text: `Permission: ${content}${kind ? ` (${kind})` : ""}` }),
      decision?.option_id
        ? h("span", { class: "decision", text: `${decision.option_id}${decision.decided_by ? ` · ${decision.decided_by}` : ""}` })
        : null);
  }
  if (type === "clarification_request") {
    const pendingId = String(m.metadata?.pending_id ?? "");
    const stored = String(m.metadata?.status || "pending");
    // A set-aside question keeps its stored status; only the bundle's state says it.
    const status = stored === "pending" && superseded.has(pendingId) ? "superseded" : stored;
    return h("div", { ...attrs, dataset: { ...attrs.dataset, status, pendingId } },
      h("span", { class: "badge", testid: "question-status", text: QUESTION_STATUS[status] ?? status }),
      h("span", { class: "content", text: content }),
      status === "superseded" ? h("span", { class: "superseded-note", testid: "question-superseded",
        text: "set aside by a newer message: it can no longer be answered" }) : null,
      answeredLater ? h("span", { class: "answered-later", text: "answered later, below" }) : ownAnswer(m),
      ambiguousDelivery(m));
  }
  const text = author === "agent" ? readableReply(readableAgentText(content)) : content;
  return h("div", { ...attrs, title: text !== content ? content : null }, speaker(author),
    h("div", { class: "content markdown" }, ...renderMarkdown(text)));
}

/**
 * Who said it: "You" or "Agent".
 * @param {string} author
 */
function speaker(author) {
  return h("span", { class: "speaker", testid: "speaker", text: author === "user" ? "You" : author === "agent" ? "Agent" : "Clarion" });
}

/** A question row's status in the words the overlay uses ("Skip", never "rejected"). */
const QUESTION_STATUS = /** @type {Record<string, string>} */ ({
  pending: "waiting", answered: "answered", rejected: "skipped", expired: "expired", cancelled: "cancelled",
  superseded: "superseded",
});

/**
 * The person's answer to one question, as they would say it: the option's label or their own
 * text, and when it was given. Null while the question is open.
 * @param {Message} m
 */
export function ownAnswer(m) {
  const meta = m.metadata ?? {};
  const status = String(meta.status ?? "");
  /** @type {string} */
  let text;
  if (status === "answered") {
    const response = meta.response ?? {};
    const options = Array.isArray(meta.question?.options) ? meta.question.options : [];
    const labels = (Array.isArray(response.selected_options) ? response.selected_options : []).map(
      (/** @type {string} */ id) => String(options.find((/** @type {any} */ o) => o.option_id === id)?.label ?? id));
    const custom = typeof response.custom_text === "string" ? response.custom_text.trim() : "";
    text = [...labels, ...(custom ? [custom] : [])].join(", ") || "(no answer)";
  } else if (status === "rejected") {
    text = "Skipped";
  } else {
    return null;
  }
  const when = typeof m.updated_at === "string" ? m.updated_at : "";
  const policy = byPolicy(m);
  if (policy && status === "answered") text = `${text}, the default`;
  const label = policy ? (status === "answered" ? "Answered by the expiry policy: " : "By the expiry policy: ")
    : status === "answered" ? "You answered: " : "You: ";
  return h("div", { class: `own-answer${policy ? " by-policy" : ""}`, testid: "your-answer", dataset: { by: policy ? "policy" : "person" } },
    h("span", { class: "own-answer-label", text: label }),
    h("span", { class: "own-answer-text", testid: "your-answer-text", text }),
    when ? h("time", { datetime: when, title: fullStamp(when), text: ` · ${stamp(when)}` }) : null);
}

/**
 * Whether the waiting policy's expiry answered (or skipped) the question, not a person.
 * @param {Message} m
 */
function byPolicy(m) {
  return m.metadata?.answered_by === "policy";
}

/**
 * The warning and "Send it again" button under the first question of a bundle whose answer a
 * server restart left possibly undelivered (`delivery: "ambiguous"`); null otherwise.
 * @param {Message} m
 */
function ambiguousDelivery(m) {
  const meta = m.metadata ?? {};
  const index = Number(meta.question_index ?? 0);
  if (meta.delivery !== "ambiguous" || index > 0 || typeof meta.pending_id !== "string") return null;
  const sending = meta.resend_pending === true;
  return h("div", { class: "delivery-ambiguous", role: "note", testid: "delivery-ambiguous" },
    h("span", { text: "The server restarted while handing this answer to the agent: " +
      "the agent may not have received it." }),
    h("button", { type: "button", testid: "resend-answer", disabled: sending,
      dataset: { resend: meta.pending_id } }, sending ? "Sending again…" : "Send it again"));
}


/**
 * Sends an ambiguous answer again (the person's explicit decision; the server allows it once).
 * @param {import("./api.js").Api} api
 * @param {string} pendingId
 * @param {HTMLButtonElement} button
 * @param {(text: string) => void} say
 */
export async function resendAnswer(api, pendingId, button, say) {
  button.disabled = true;
  try {
    await api.resend(pendingId);
    say("Answer sent to the agent again.");
  } catch (err) {
    button.disabled = false;
    say(`Could not send the answer again: ${humanError(err)}`);
  }
}
