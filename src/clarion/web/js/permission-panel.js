// The permission panel: an agent's pending permission request shown like a question (the tool
// call's title, kind and input, bounded and readable; the agent's options as buttons, keys 1-9
// while it has focus), and the outcome of a decision per the contract (200 closes it, 409
// shows the winning decision). Imported by session-view.js, which decides which request is
// current (transcript.js `pendingPermission`).

import { h } from "./dom.js";
import { trapTab } from "./focus.js";
import { optionMeaning, previewOf } from "./permission-preview.js";

/** @typedef {import("./api.js").Api} Api */
/** @typedef {import("./transcript.js").Message} Message */

/** A tool's input is shown up to this many characters; the rest is cut, and says so. */
export const INPUT_LIMIT = 2000;
/** A diff shows at most this many lines; the rest is counted. */
const DIFF_LINES_SHOWN = 200;

/**
 * The change the tool call would make, as a person reads it (see permission-preview.js).
 * @param {Record<string, any>} tool
 */
function previewElement(tool) {
  const preview = previewOf(tool);
  if (preview.type === "diff") {
    const shown = preview.lines.slice(0, DIFF_LINES_SHOWN);
    const more = preview.lines.length - shown.length;
    const signs = { "+": "diff-add", "-": "diff-del", " ": "diff-ctx" };
    return h("div", { class: "permission-preview" },
      preview.path ? h("p", { class: "permission-path", testid: "permission-path", text: preview.path }) : null,
      preview.note ? h("p", { class: "permission-note", text: preview.note }) : null,
      h("pre", { class: "permission-input permission-diff", testid: "permission-diff" },
        ...shown.map((l) => h("span", { class: signs[l.sign], text: `${l.sign} ${l.text}\n` })),
        more > 0 ? h("span", { class: "diff-more", text: `… ${more} more lines` }) : null));
  }
  if (preview.type === "command") {
    return h("div", { class: "permission-preview" },
      h("pre", { class: "permission-input permission-command", testid: "permission-command", text: `$ ${preview.command}` }),
      preview.cwd ? h("p", { class: "permission-note", text: `in ${preview.cwd}` }) : null);
  }
  if (preview.type === "fetch") return h("p", { class: "permission-path", testid: "permission-url", text: preview.url });
  if (preview.type === "raw") return h("pre", { class: "permission-input", testid: "permission-input", text: readableInput(preview.text) });
  return null;
}

/**
 * The tool input as readable text: strings as they are, anything else as indented JSON, at
 * most `limit` characters.
 * @param {unknown} raw
 * @param {number} [limit]
 * @returns {string}
 */
export function readableInput(raw, limit = INPUT_LIMIT) {
  if (raw === undefined || raw === null) return "";
  let text;
  if (typeof raw === "string") text = raw;
  else {
    try { text = JSON.stringify(raw, null, 2); } catch { text = String(raw); }
  }
  return text.length <= limit ? text : `${text.slice(0, limit)}\n… (${text.length - limit} more characters)`;
}

/**
 * The words for a decision: `{option_id, kind, decided_by}` with the option's name if known.
 * @param {Record<string, any> | null | undefined} decision
 * @param {Array<Record<string, any>>} options
 * @param {string} state
 */
export function describeDecision(decision, options, state) {
  if (!decision || !decision.option_id) return state === "pending" ? "" : `Request ${state}.`;
  const option = options.find((o) => o.option_id === decision.option_id);
  const by = decision.decided_by ? ` by ${decision.decided_by}` : "";
  return `${option?.name ?? decision.option_id} (${state})${by}`;
}

export class PermissionPanel {
  /**
   * @param {{api: Api, onClosed: (messageId: string, text: string) => void, focusOnShow?: boolean}} deps
   */
  constructor(deps) {
    this.deps = deps;
    this.root = h("section", {
      class: "overlay permission-panel", testid: "permission-panel", tabindex: "0", role: "dialog",
      "aria-label": "Permission requested by the agent", hidden: true,
    });
    /** @type {Message | null} */
    this.request = null;
    this.submitting = false;
    this.error = "";
    this.root.addEventListener("keydown", (e) => this.onKey(/** @type {KeyboardEvent} */ (e)));
  }

  /** @returns {string | null} */
  get messageId() {
    return this.request && !this.root.hidden ? this.request.id : null;
  }

  /** @param {Message} request */
  show(request) {
    const same = this.request?.id === request.id;
    // Drawn again only when it changed: buttons drawn anew between a press and its release
    // take no click, and the decision would silently not be sent.
    if (same && !this.root.hidden && JSON.stringify(this.request) === JSON.stringify(request)) return;
    this.request = request;
    if (!same) { this.error = ""; this.submitting = false; }
    const wasHidden = this.root.hidden;
    this.root.hidden = false;
    this.render();
    const active = document.activeElement;
    if ((this.deps.focusOnShow ?? true) && wasHidden && !(active && ["TEXTAREA", "INPUT"].includes(active.tagName))) {
      this.root.focus();
    }
  }

  hide() {
    this.request = null;
    this.root.hidden = true;
    this.root.replaceChildren();
  }

  /** @returns {Array<Record<string, any>>} */
  options() {
    return Array.isArray(this.request?.metadata?.options) ? this.request.metadata.options : [];
  }

  render() {
    const request = this.request;
    if (!request) return;
    const tool = request.metadata?.tool_call ?? {};
    const toolKind = String(tool.kind ?? "other");
    this.root.classList.toggle("submitting", this.submitting);
    this.root.replaceChildren(
      h("div", { class: "overlay-header" },
        h("strong", { text: "The agent asks for permission" }),
        h("span", { class: "badge", testid: "permission-kind", text: String(tool.kind ?? "other") })),
      h("p", { class: "permission-title", testid: "permission-title", text: String(tool.title ?? request.content ?? "") }),
      previewElement(tool) ?? "",
      h("div", { class: "options permission-options" },
        ...this.options().map((o, i) => h("button", {
          type: "button",
          class: `option permission-option kind-${String(o.kind ?? "")}`,
          testid: `permission-option-${o.option_id}`,
          disabled: this.submitting,
          dataset: { kind: String(o.kind ?? "") },
          onClick: () => void this.decide({ option_id: o.option_id }),
        }, h("span", { class: "option-label" }, h("kbd", { text: String(i + 1) }), String(o.name ?? o.option_id)),
        optionMeaning(String(o.kind ?? ""), toolKind)
          ? h("span", { class: "option-description", testid: "permission-option-meaning", text: optionMeaning(String(o.kind ?? ""), toolKind) })
          : null))),
      this.error ? h("div", { class: "error", role: "alert", testid: "permission-error", text: this.error }) : "",
    );
  }

  /** @param {KeyboardEvent} e */
  onKey(e) {
    // In the session view the panel is a dialog: Tab stays inside it (the inbox shows it inline).
    if ((this.deps.focusOnShow ?? true) && trapTab(this.root, e)) return;
    if (this.submitting || e.ctrlKey || e.metaKey || e.altKey) return;
    const n = Number(e.key);
    const options = this.options();
    if (Number.isInteger(n) && n >= 1 && n <= options.length) {
      e.preventDefault();
      void this.decide({ option_id: options[n - 1].option_id });
    }
  }

  /** @param {Record<string, unknown>} body */
  async decide(body) {
    const request = this.request;
    if (!request || this.submitting) return;
    this.submitting = true;
    this.error = "";
    this.render();
    try {
      const res = await this.deps.api.decidePermission(request.id, body);
      const text = describeDecision(res?.decision, this.options(), String(res?.state ?? ""));
      this.hide();
      this.deps.onClosed(request.id, `Permission: ${text}${res?.delivered === false ? " (the agent was no longer waiting)" : ""}`);
    } catch (err) {
      const e = /** @type {any} */ (err);
      if (e?.status === 409) {
        const winner = describeDecision(e.decision, this.options(), String(e.state ?? "closed"));
        this.hide();
        this.deps.onClosed(request.id, `This request was already settled: ${winner || e.state || "closed"}`);
        return;
      }
      this.submitting = false;
      this.error = `Not sent: ${e?.message ?? String(err)}`;
      this.render();
    }
  }
}
