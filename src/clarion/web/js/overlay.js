// The clarification overlay: one bundle's questions (a stepper when there are several, shared
// context shown once), option buttons, a multi-line custom answer, Submit and Skip, keyboard
// shortcuts while it has focus, and the outcome of a response per the respond contract.
// Imported by session-view.js, which decides which bundle is current.

import {
  answerBody,
  canSubmit,
  createForm,
  describeResponse,
  goToStep,
  isAnswered,
  optionForKey,
  selectOption,
  setCustomText,
  skipBody,
} from "./answer-form.js";
import { h } from "./dom.js";

/** @typedef {import("./answer-form.js").Bundle} Bundle */
/** @typedef {import("./answer-form.js").AnswerForm} AnswerForm */
/** @typedef {import("./api.js").Api} Api */
/**
 * @typedef {{kind: "answered" | "conflict" | "accepted", text: string, winner?: string}} Outcome
 *   what the session view shows after the overlay closed for a response
 */

const TEXT_INPUTS = new Set(["TEXTAREA", "INPUT", "SELECT"]);

/** On a touch screen the keyboard's Enter is the only way to start a new line. */
const touchScreen = () => typeof matchMedia === "function" && matchMedia("(pointer: coarse)").matches;

export class ClarificationOverlay {
  /**
   * @param {{api: Api, onClosed: (pendingId: string, outcome: Outcome) => void,
   *   onDismiss: (pendingId: string) => void}} deps
   */
  constructor(deps) {
    this.deps = deps;
    this.root = h("section", {
      class: "overlay", testid: "clarification-overlay", tabindex: "0", role: "dialog",
      "aria-label": "Question from the agent", hidden: true,
    });
    /** @type {Bundle | null} */
    this.bundle = null;
    /** @type {AnswerForm | null} */
    this.form = null;
    this.submitting = false;
    /** @type {string} */
    this.error = "";
    this.root.addEventListener("keydown", (e) => this.onKey(/** @type {KeyboardEvent} */ (e)));
  }

  /** @returns {string | null} */
  get pendingId() {
    return this.bundle && !this.root.hidden ? this.bundle.pending_id : null;
  }

  /**
   * Shows a bundle. The same bundle again keeps the person's drafts and refreshes its state.
   * @param {Bundle} bundle
   */
  show(bundle) {
    const same = this.bundle?.pending_id === bundle.pending_id && this.form !== null;
    this.bundle = bundle;
    if (!same) {
      this.form = createForm(bundle);
      this.error = "";
      this.submitting = false;
    }
    const wasHidden = this.root.hidden;
    this.root.hidden = false;
    this.render();
    const active = document.activeElement;
    if (wasHidden && !(active && TEXT_INPUTS.has(active.tagName))) this.root.focus();
  }

  hide() {
    this.root.hidden = true;
    this.root.replaceChildren();
  }

  /** Forgets the bundle entirely (a different session, or it was resolved). */
  reset() {
    this.bundle = null;
    this.form = null;
    this.hide();
  }

  /** @param {AnswerForm} next */
  setForm(next) {
    if (next === this.form) return;
    this.form = next;
    this.render();
  }

  render() {
    const bundle = this.bundle;
    const form = this.form;
    if (!bundle || !form) return;
    const hadFocus = this.root.contains(document.activeElement);
    const multi = form.questions.length > 1;
    const question = form.questions[form.step];
    const draft = form.drafts[question.id];
    this.root.dataset.pendingId = bundle.pending_id;
    this.root.dataset.state = bundle.state;
    this.root.classList.toggle("submitting", this.submitting);
    // The native replaceChildren would print a skipped part (null) as the text "null".
    const parts = [
      h("header", { class: "overlay-header" },
        h("strong", {}, "The agent has a question"),
        h("button", { type: "button", class: "icon", testid: "dismiss-question", title: "Hide for now (Esc)",
          "aria-label": "Hide question", onClick: () => this.dismiss() }, "✕")),
      bundle.state === "active_detached"
        ? h("p", { class: "notice", testid: "detached-notice" },
          "The agent stopped waiting. It will resume with your answer when you send it.")
        : null,
      form.context ? h("p", { class: "context", testid: "clarification-context", text: form.context }) : null,
      multi ? h("nav", { class: "stepper", "aria-label": "Questions" }, form.questions.map((q, i) => h("button", {
        type: "button", testid: `step-${i + 1}`,
        class: `step${i === form.step ? " active" : ""}${isAnswered(form, q.id) ? " answered" : ""}`,
        "aria-current": i === form.step ? "step" : null, disabled: this.submitting,
        onClick: () => this.setForm(goToStep(form, i)),
      }, `${i + 1}. ${q.title || `Question ${i + 1}`}`))) : null,
      h("div", { class: "question", testid: "clarification-question", dataset: { questionId: question.id } },
        question.title && !multi ? h("p", { class: "question-title", text: question.title }) : null,
        h("p", { class: "question-prompt", testid: "question-prompt", text: question.prompt }),
        h("div", { class: "options", role: "group" }, question.options.map((o, i) => h("button", {
          type: "button", testid: `option-${question.id}-${o.option_id}`,
          class: `option${draft.selected === o.option_id ? " selected" : ""}`,
          "aria-pressed": draft.selected === o.option_id ? "true" : "false", disabled: this.submitting,
          title: i < 6 ? `Shortcut: ${i + 1}` : null,
          onClick: () => this.setForm(selectOption(form, question.id, o.option_id)),
        },
        h("span", { class: "option-label" }, i < 6 ? h("kbd", {}, String(i + 1)) : null,
          h("span", { testid: "option-label", text: o.label })),
        o.description ? h("span", { class: "option-description", testid: "option-description", text: o.description }) : null))),
        h("label", { class: "custom" },
          touchScreen() ? "Or write your own answer" : "Or write your own answer (Shift+Enter for a new line)",
          this.customInput(question.id, draft.custom))),
      h("p", { class: "error", testid: "clarification-error", role: "alert", hidden: !this.error, text: this.error }),
      h("footer", { class: "overlay-actions" },
        multi ? h("button", { type: "button", testid: "step-back", disabled: form.step === 0 || this.submitting,
          onClick: () => this.setForm(goToStep(form, form.step - 1)) }, "Back") : null,
        multi && form.step < form.questions.length - 1 ? h("button", { type: "button", testid: "step-next",
          disabled: this.submitting, onClick: () => this.setForm(goToStep(form, form.step + 1)) }, "Next") : null,
        h("span", { class: "spacer" }),
        h("button", { type: "button", testid: "skip-question", class: "secondary", disabled: this.submitting,
          title: "Decline to answer", onClick: () => void this.send(skipBody()) }, "Skip"),
        h("button", { type: "button", testid: "submit-answer", class: "primary",
          disabled: this.submitting || !canSubmit(form), title: "Submit (Ctrl+Enter)",
          onClick: () => void this.submit() }, this.submitting ? "Sending…" : "Submit")),
    ];
    this.root.replaceChildren(...parts.filter((part) => part !== null));
    if (hadFocus && !this.root.contains(document.activeElement)) this.root.focus();
  }

  /**
   * @param {string} questionId
   * @param {string} value
   */
  customInput(questionId, value) {
    const area = /** @type {HTMLTextAreaElement} */ (h("textarea", {
      rows: "2", testid: `custom-text-${questionId}`, disabled: this.submitting,
    }));
    area.value = value;
    area.addEventListener("input", () => {
      if (!this.form) return;
      // Update the drafts without re-rendering so the caret stays where it is.
      this.form = setCustomText(this.form, questionId, area.value);
      this.refreshControls();
    });
    area.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || e.shiftKey || e.ctrlKey || e.metaKey || !this.form || touchScreen()) return;
      e.preventDefault();
      const form = this.form;
      if (canSubmit(form)) void this.submit();
      else if (isAnswered(form, questionId) && form.step < form.questions.length - 1) {
        this.setForm(goToStep(form, form.step + 1));
      }
    });
    return area;
  }

  /** Re-reads the drafts into the buttons without rebuilding the overlay. */
  refreshControls() {
    const form = this.form;
    if (!form) return;
    const question = form.questions[form.step];
    for (const o of question.options) {
      const btn = this.root.querySelector(`[data-testid="option-${CSS.escape(question.id)}-${CSS.escape(o.option_id)}"]`);
      const on = form.drafts[question.id].selected === o.option_id;
      btn?.classList.toggle("selected", on);
      btn?.setAttribute("aria-pressed", on ? "true" : "false");
    }
    form.questions.forEach((q, i) => {
      this.root.querySelector(`[data-testid="step-${i + 1}"]`)?.classList.toggle("answered", isAnswered(form, q.id));
    });
    const submit = /** @type {HTMLButtonElement | null} */ (this.root.querySelector('[data-testid="submit-answer"]'));
    if (submit) submit.disabled = this.submitting || !canSubmit(form);
  }

  dismiss() {
    if (!this.bundle) return;
    const pendingId = this.bundle.pending_id;
    this.hide();
    this.deps.onDismiss(pendingId);
  }

  /** @param {KeyboardEvent} e */
  onKey(e) {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      this.dismiss();
      return;
    }
    const form = this.form;
    if (!form || this.submitting) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (canSubmit(form)) void this.submit();
      return;
    }
    const target = /** @type {HTMLElement} */ (e.target);
    if (TEXT_INPUTS.has(target.tagName) || e.ctrlKey || e.metaKey || e.altKey) return;
    const pick = optionForKey(form, e.key);
    if (pick) {
      e.preventDefault();
      this.setForm(selectOption(form, pick.questionId, pick.optionId));
    }
  }

  async submit() {
    if (this.form && canSubmit(this.form)) await this.send(answerBody(this.form));
  }

  /**
   * Sends a response and applies the contract's outcome.
   * @param {unknown} body
   */
  async send(body) {
    const bundle = this.bundle;
    if (!bundle || this.submitting) return;
    this.submitting = true;
    this.error = "";
    this.render();
    const pendingId = bundle.pending_id;
    try {
      const res = await this.deps.api.respond(pendingId, body);
      if (res && res.claimed === false) {
        // A kandev-shaped server reports a lost race as 200 with the winner's response.
        const winner = describeResponse(res.response, bundle.questions);
        this.finish(pendingId, { kind: "conflict", text: "This question was already answered.", winner });
        return;
      }
      this.finish(pendingId, { kind: "answered", text: res?.status === "rejected" ? "Question skipped." : "Answer sent." });
    } catch (err) {
      const e = /** @type {import("./api.js").ApiError} */ (err);
      if (e.status === 409) {
        const winner = describeResponse(e.response, bundle.questions);
        this.finish(pendingId, {
          kind: "conflict",
          text: winner ? "This question was already answered." : `This question is no longer active (${e.state ?? "closed"}).`,
          winner,
        });
      } else if (e.status >= 500 && !e.retryable) {
        this.finish(pendingId, { kind: "accepted", text: "Your answer was accepted; do not send it again." });
      } else {
        this.submitting = false;
        this.error = e.retryable
          ? `Not delivered (${e.code}). Your answers are kept here and can be sent again.`
          : `Not sent: ${e.message}${e.field ? ` (${e.field})` : ""}`;
        if (this.bundle?.pending_id === pendingId) this.render();
      }
    }
  }

  /**
   * @param {string} pendingId
   * @param {Outcome} outcome
   */
  finish(pendingId, outcome) {
    this.submitting = false;
    if (this.bundle?.pending_id === pendingId) this.reset();
    this.deps.onClosed(pendingId, outcome);
  }
}
