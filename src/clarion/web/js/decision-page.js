// The decision page (/p/<token>): one permission request, read and decided with the link's
// token as the only credential. It shows what the agent would do the way the main UI does
// (permission-preview.js: the command, the change as a diff), renders the task's Markdown with
// the main UI's renderer (text never becomes HTML: the renderer builds elements with
// textContent), and keeps one mark in localStorage: that this browser's decision through the
// link was recorded, so reopening it says "You decided".

import { el, linkPage, loadLinked, outcome, ownMarks, reveal, show } from "./link-page.js";
import { renderMarkdown } from "./markdown.js";
import { optionMeaning, previewOf } from "./permission-preview.js";

/** @typedef {{option_id: string, name?: string, kind?: string}} Option */
/** @typedef {{option_id?: string, kind?: string, decided_by?: string}} Decision */
/**
 * @typedef {{message_id: string, state: string, tool_call: Record<string, any>, options: Option[],
 *   decision: Decision | null, task: {id: string, title: string, description: string}}} Linked
 */

/** A diff shows at most this many lines; the rest is counted (as in the main UI). */
const DIFF_LINES_SHOWN = 200;
const own = ownMarks("clarion.link-decided.");

const { page, api } = linkPage("decision-page", "p");

/** What the tool call would do: its command, its change as a diff, its address, or its input.
 * @param {Record<string, any>} tool @returns {HTMLElement | null} */
function previewElement(tool) {
  const preview = previewOf(tool);
  if (preview.type === "diff") {
    const shown = preview.lines.slice(0, DIFF_LINES_SHOWN);
    const more = preview.lines.length - shown.length;
    const signs = { "+": "diff-add", "-": "diff-del", " ": "diff-ctx" };
    const pre = el("pre", { class: "code diff", "data-testid": "decision-diff" },
      shown.map((l) => el("span", { class: signs[l.sign] }, [`${l.sign} ${l.text}\n`])));
    if (more > 0) pre.append(el("span", { class: "diff-more" }, [`… ${more} more lines`]));
    return el("div", {}, [
      ...(preview.path ? [el("p", { class: "path", "data-testid": "decision-path" }, [preview.path])] : []),
      ...(preview.note ? [el("p", { class: "hint" }, [preview.note])] : []),
      pre,
    ]);
  }
  if (preview.type === "command") {
    return el("div", {}, [
      el("pre", { class: "code", "data-testid": "decision-command" }, [`$ ${preview.command}`]),
      ...(preview.cwd ? [el("p", { class: "hint" }, [`in ${preview.cwd}`])] : []),
    ]);
  }
  if (preview.type === "fetch") return el("p", { class: "path", "data-testid": "decision-url" }, [preview.url]);
  if (preview.type === "raw") return el("pre", { class: "code", "data-testid": "decision-input" }, [preview.text]);
  return null;
}

/** @param {Linked} request */
function requestCards(request) {
  const task = el("section", { class: "card", "data-testid": "decision-task" }, [
    el("p", { class: "label" }, ["Task"]),
    el("h1", { "data-testid": "decision-task-title" }, [request.task.title || "Untitled task"]),
  ]);
  if (request.task.description) {
    task.append(el("div", { class: "prose markdown", "data-testid": "decision-task-description" },
      renderMarkdown(request.task.description)));
  }
  const tool = request.tool_call ?? {};
  const asked = el("section", { class: "card", "data-testid": "decision-request" }, [
    el("p", { class: "label" }, [`The agent asks for permission · ${String(tool.kind ?? "other")}`]),
    el("h2", { "data-testid": "decision-title" }, [String(tool.title ?? "A tool call")]),
  ]);
  const preview = previewElement(tool);
  if (preview) asked.append(preview);
  return [task, asked];
}

/** @param {Linked} request @param {Decision | null | undefined} decision */
function decisionWords(request, decision) {
  if (!decision || !decision.option_id) return "";
  const option = request.options.find((o) => o.option_id === decision.option_id);
  return option?.name ?? decision.option_id;
}

/** @param {Linked} request @param {Decision | null} decision */
function showTaken(request, decision) {
  const chosen = decisionWords(request, decision);
  let title, text, by;
  if (!chosen) {
    title = "No longer waiting";
    text = request.state === "expired"
      ? "The server restarted while this request waited; the agent no longer needs a decision."
      : "The agent's call ended before anyone decided; it no longer needs a decision.";
    by = "none";
  } else if (decision?.decided_by === "policy") {
    title = "Decided by the agent's policy";
    text = `The permission policy chose: ${chosen}.`;
    by = "policy";
  } else if (own.here(request.message_id)) {
    title = "You decided";
    text = `You decided through this link: ${chosen}.`;
    by = "you";
  } else {
    title = "Already decided";
    text = `Someone decided this request before you: ${chosen}.`;
    by = "someone";
  }
  const card = outcome(title, text, "decision-already", "taken");
  card.dataset.by = by;
  show(page, "taken", [...requestCards(request), card]);
  reveal(card);
}

/** @param {Linked} request @param {any} result the 200 body */
function showDone(request, result) {
  const chosen = decisionWords(request, result.decision) || "cancelled";
  const card = outcome(
    "You decided",
    result.delivered === false
      ? `Recorded: ${chosen}. The agent was no longer waiting for it.`
      : `The agent has your decision: ${chosen}.`,
    "decision-done",
    "ok",
  );
  card.dataset.state = String(result.state ?? "");
  show(page, "decided", [...requestCards(request), card]);
  reveal(card);
}

/** @param {Linked} request */
function showForm(request) {
  const toolKind = String(request.tool_call?.kind ?? "other");
  const message = el("p", { class: "hint", "data-testid": "decision-message", role: "status", "aria-live": "polite" });
  const buttons = request.options.map((option) => {
    const kind = String(option.kind ?? "");
    const meaning = optionMeaning(kind, toolKind);
    const button = el("button", {
      type: "button", class: kind === "allow_once" ? "choice primary" : "choice",
      "data-testid": "decision-option", "data-option-id": option.option_id, "data-kind": kind,
    }, [el("span", { class: "choice-name" }, [option.name || option.option_id]),
      ...(meaning ? [el("span", { class: "desc" }, [meaning])] : [])]);
    button.addEventListener("click", () => void decide(request, option.option_id, buttons, message));
    return button;
  });
  const choices = el("section", { class: "card" }, [
    el("p", { class: "label" }, ["Your decision"]),
    el("div", { class: "actions choices" }, buttons),
    message,
  ]);
  show(page, "open", [...requestCards(request), choices]);
}

/**
 * @param {Linked} request @param {string} optionId @param {HTMLElement[]} buttons
 * @param {HTMLElement} message
 */
async function decide(request, optionId, buttons, message) {
  // One decision per page: a second tap while the first is on its way sends nothing.
  if (buttons.some((b) => /** @type {HTMLButtonElement} */ (b).disabled)) return;
  buttons.forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = true; });
  message.className = "hint";
  message.textContent = "Sending…";
  let res;
  try {
    res = await fetch(`${api}/respond`, {
      method: "POST",
      credentials: "omit",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ option_id: optionId }),
    });
  } catch {
    buttons.forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = false; });
    message.className = "error";
    message.textContent = "Cannot reach Clarion. Check your connection and decide again.";
    return;
  }
  const data = await res.json().catch(() => ({}));
  if (res.ok) {
    own.mark(request.message_id);
    showDone(request, data);
    return;
  }
  const error = data.error ?? {};
  if (res.status === 409) {
    const fresh = await fetch(api, { credentials: "omit", cache: "no-store" })
      .then((r) => (r.ok ? r.json() : null)).catch(() => null);
    const now = fresh ? { ...request, ...fresh } : { ...request, state: String(error.state ?? "cancelled") };
    showTaken(now, error.decision ?? fresh?.decision ?? null);
    return;
  }
  if (res.status === 404) {
    showInvalid();
    return;
  }
  buttons.forEach((b) => { /** @type {HTMLButtonElement} */ (b).disabled = false; });
  message.className = "error";
  message.textContent = error.message || `Clarion refused the decision (${res.status}).`;
}

function showInvalid() {
  show(page, "invalid", [
    outcome(
      "This decision link is not valid",
      "It may have expired, been copied incompletely, or never have been issued by this Clarion server. Open the request from Clarion's inbox, or ask for a new link.",
      "decision-invalid",
      "taken",
    ),
  ]);
}

void loadLinked({
  page,
  api,
  name: "decision",
  noun: "request",
  invalid: showInvalid,
  opened: (/** @type {Linked} */ request) => {
    if (request.state === "pending") showForm(request);
    else showTaken(request, request.decision);
  },
});
