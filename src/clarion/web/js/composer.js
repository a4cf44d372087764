// The session's prompt box and actions: Send (Enter), Cancel turn (only while a turn runs),
// Finish (confirmed first); all off once the session is finished. Imported by session-view.js,
// which calls `update` with the session's state on every change.

import { confirmAction } from "./confirm.js";
import { h } from "./dom.js";
import { humanError } from "./errors.js";
import { touchScreen } from "./focus.js";
import { canCancel, isFinished } from "./session-words.js";

/** @typedef {import("./api.js").Api} Api */

const PLACEHOLDER = "Message the agent (Enter to send, Shift+Enter for a new line)";
/** A touch keyboard's Enter starts a new line; Send sends. */
const TOUCH_PLACEHOLDER = "Message the agent";
const placeholder = () => (touchScreen() ? TOUCH_PLACEHOLDER : PLACEHOLDER);

export class Composer {
  /** @param {{api: Api, sessionId: string, onChange: () => void}} deps */
  constructor(deps) {
    this.deps = deps;
    this.sending = false;
    this.finished = false;
    this.input = /** @type {HTMLTextAreaElement} */ (h("textarea", { rows: "2", testid: "prompt-input",
      placeholder: placeholder(), "aria-label": "Prompt" }));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !touchScreen()) { e.preventDefault(); void this.sendPrompt(); }
    });
    this.sendButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "primary", testid: "prompt-send",
      onClick: () => void this.sendPrompt() }, "Send"));
    this.cancelButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", testid: "session-cancel",
      onClick: () => void this.act("cancel") }, "Cancel turn"));
    this.finishButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", testid: "session-finish",
      onClick: () => void this.confirmFinish() }, "Finish"));
    this.status = h("span", { class: "prompt-status", testid: "prompt-status", role: "status" });
    // Said before sending: a new message starts a turn, and the open question no longer counts.
    this.asideWarning = h("p", { class: "prompt-warning", testid: "prompt-sets-question-aside", id: `aside-${deps.sessionId}`,
      hidden: true, text: "A question is open: sending a new message sets the open question aside, " +
        "and it can no longer be answered. Answer it first to keep it." });
    this.parts = [
      this.asideWarning,
      h("div", { class: "prompt-box" }, this.input, this.sendButton),
      h("div", { class: "session-actions" }, this.status, h("span", { class: "spacer" }),
        this.cancelButton, this.finishButton),
    ];
  }

  /**
   * @param {unknown} state the session's state
   * @param {boolean} known whether the session row is loaded
   */
  update(state, known) {
    this.finished = isFinished(state);
    this.input.disabled = this.finished;
    this.sendButton.disabled = this.finished || this.sending;
    this.input.placeholder = this.finished ? "This session is finished; start a new one from the task." : placeholder();
    this.cancelButton.disabled = !canCancel(state);
    this.cancelButton.title = this.cancelButton.disabled ? "No turn is running" : "Stop the agent's current turn";
    this.finishButton.disabled = this.finished || !known;
  }

  /**
   * Shows or hides the warning that a new message sets the open question aside.
   * @param {boolean} open whether the session has a question waiting for an answer
   */
  setOpenQuestion(open) {
    this.asideWarning.hidden = !open;
    if (open) this.input.setAttribute("aria-describedby", this.asideWarning.id);
    else this.input.removeAttribute("aria-describedby");
  }

  async sendPrompt() {
    const text = this.input.value;
    if (!text.trim() || this.input.disabled) return;
    this.sending = true;
    this.sendButton.disabled = true;
    try {
      const res = await this.deps.api.prompt(this.deps.sessionId, text);
      this.input.value = "";
      this.status.textContent = res?.queued ? "Queued: it will run when the current turn ends." : "Sent.";
      this.status.dataset.queued = res?.queued ? "true" : "false";
    } catch (err) {
      this.status.textContent = `Not sent: ${humanError(err)}`;
      this.status.dataset.queued = "false";
    } finally {
      this.sending = false;
      this.deps.onChange();
    }
  }

  async confirmFinish() {
    const ok = await confirmAction("Finish this session?", {
      confirm: "Finish session",
      detail: "The agent stops and any open question expires. A finished session takes no more prompts.",
      danger: true,
    });
    if (ok) await this.act("finish");
  }

  /** @param {"cancel" | "finish"} what */
  async act(what) {
    const { api, sessionId } = this.deps;
    try {
      if (what === "cancel") await api.cancel(sessionId);
      else await api.finish(sessionId, "completed");
      this.status.textContent = what === "cancel" ? "Cancel requested." : "Session finished.";
    } catch (err) {
      this.status.textContent = `${what === "cancel" ? "Cancel" : "Finish"} failed: ${humanError(err)}`;
    }
  }
}
