// The clarification overlay: one bundle's questions (a stepper when there are several, shared
// context shown once), option buttons, a multi-line custom answer, Submit and Skip, keyboard
// shortcuts while it has focus, and the outcome of a response per the respond contract.
// Imported by session-view.js, which decides which bundle is current.

import { errorOutcome, successOutcome } from "./answer-outcome.js";
import {
  answerBody,
  canSubmit,
  createForm,
  goToStep,
  isAnswered,
  optionForKey,
  selectOption,
  setCustomText,
  skipBody,
  submitHint,
} from "./answer-form.js";
import { h } from "./dom.js";
import { forgetDraft, restoreDraft, saveDraft } from "./drafts.js";
import { renderMarkdown } from "./markdown.js";
import { canRefocus, touchScreen, trapTab } from "./focus.js";
import { optionGroup, refreshControls, skipConfirmation, stepChips, waitingLine } from "./overlay-parts.js";

/** @typedef {import("./answer-form.js").Bundle} Bundle */
/** @typedef {import("./answer-form.js").AnswerForm} AnswerForm */
/** @typedef {import("./api.js").Api} Api */
/** @typedef {import("./answer-outcome.js").Outcome} Outcome */

const TEXT_INPUTS = new Set(["TEXTAREA", "INPUT", "SELECT"]);


let overlayCount = 0;

export class ClarificationOverlay {
  /**
   * `modal` (the session view's overlay): Tab stays inside, Escape hides it, focus goes back
   * where it came from. The inbox shows several side by side, not modal.
   * @param {{api: Api, onClosed: (pendingId: string, outcome: Outcome) => void,
   *   onDismiss?: (pendingId: string) => void, modal?: boolean,
   *   drafts?: import("./drafts.js").DraftStorage}} deps
   */
  constructor(deps) {
    this.deps = deps;
    this.modal = deps.modal ?? true;
    /** Where typed answers wait for a reload. */
    this.drafts = deps.drafts ?? localStorage;
    this.uid = `overlay-${++overlayCount}`;
    this.root = h("section", {
      class: "overlay", testid: "clarification-overlay", tabindex: "0", role: this.modal ? "dialog" : "region",
      "aria-modal": this.modal ? "true" : null, "aria-label": "Question from the agent", hidden: true,
    });
    /** Asking "skip all?" before the rejection is sent. */
    this.confirmingSkip = false;
    /** @type {Element | null} where focus was before the dialog took it */
    this.returnFocus = null;
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
      this.form = restoreDraft(this.drafts, createForm(bundle));
      this.error = "";
      this.submitting = false;
      this.confirmingSkip = false;
    }
    const wasHidden = this.root.hidden;
    this.root.hidden = false;
    this.render();
    const active = document.activeElement;
    if (this.modal && wasHidden && !(active && TEXT_INPUTS.has(active.tagName))) this.takeFocus();
  }

  /** Moves focus into the dialog, remembering where it was. */
  takeFocus() {
    const active = document.activeElement;
    if (active && !this.root.contains(active)) this.returnFocus = active;
    this.root.focus();
  }

  /** After an answer, focus goes back where it came from if that is in the same view. */
  giveBackFocus() {
    const back = this.returnFocus;
    this.returnFocus = null;
    if (this.modal && canRefocus(back) && this.root.parentElement?.contains(back)) back.focus();
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
    saveDraft(this.drafts, next);
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
    const promptId = `${this.uid}-prompt`;
    const hint = submitHint(form);
    // Handlers read `this.form` when they run: typed text updates it without a re-render.
    const step = (/** @type {number} */ i) => () => { if (this.form) this.setForm(goToStep(this.form, i)); };
    this.root.dataset.pendingId = bundle.pending_id;
    this.root.dataset.state = bundle.state;
    this.root.classList.toggle("submitting", this.submitting);
    // The native replaceChildren would print a skipped part (null) as the text "null".
    const parts = [
      h("header", { class: "overlay-header" },
        h("strong", {}, "The agent has a question"),
        this.deps.onDismiss ? h("button", { type: "button", class: "icon", testid: "dismiss-question", title: "Hide for now (Esc)",
          "aria-label": "Hide question", onClick: () => this.dismiss() }, "✕") : null),
      // Only the question scrolls; what follows it (the error, the Skip confirmation, why Submit
      // waits, the buttons) always has its own room below it, never drawn over it.
      h("div", { class: "overlay-body" },
        bundle.state === "active_detached"
          ? h("p", { class: "notice", testid: "detached-notice" },
            "The agent stopped waiting. It will resume with your answer when you send it.")
          : null,
        waitingLine(bundle),
        form.context ? h("div", { class: "context markdown", testid: "clarification-context" }, ...renderMarkdown(form.context)) : null,
        multi ? stepChips(form, this.submitting, step) : null,
        h("div", { class: "question", testid: "clarification-question", dataset: { questionId: question.id } },
          question.title && !multi ? h("p", { class: "question-title", text: question.title }) : null,
          h("div", { class: "question-prompt markdown", testid: "question-prompt", id: promptId }, ...renderMarkdown(question.prompt)),
          optionGroup(question, draft.selected, promptId, this.submitting,
            (optionId) => { if (this.form) this.setForm(selectOption(this.form, question.id, optionId)); }),
          h("label", { class: "custom" },
            touchScreen() ? "Or write your own answer" : "Or write your own answer (Shift+Enter for a new line)",
            this.customInput(question.id, draft.custom)))),
      h("div", { class: "overlay-foot" },
        h("p", { class: "error", testid: "clarification-error", role: "alert", hidden: !this.error, text: this.error }),
        this.confirmingSkip ? skipConfirmation(form.questions.length, () => this.cancelSkip(),
          () => { this.confirmingSkip = false; void this.send(skipBody()); }) : null,
        h("p", { class: "submit-hint", testid: "submit-hint", id: `${this.uid}-hint`, hidden: !hint, text: hint }),
        h("footer", { class: "overlay-actions" },
          multi ? h("button", { type: "button", testid: "step-back", disabled: form.step === 0 || this.submitting,
            onClick: step(form.step - 1) }, "Back") : null,
          multi && form.step < form.questions.length - 1 ? h("button", { type: "button", testid: "step-next",
            disabled: this.submitting, onClick: step(form.step + 1) }, "Next") : null,
          h("span", { class: "spacer" }),
          h("button", { type: "button", testid: "skip-question", class: "secondary", disabled: this.submitting,
            title: multi ? "Skip these questions" : "Skip this question", onClick: () => this.askSkip() }, "Skip"),
          h("button", { type: "button", testid: "submit-answer", class: "primary",
            disabled: this.submitting || !canSubmit(form), title: "Submit (Ctrl+Enter)",
            "aria-describedby": `${this.uid}-hint`,
            onClick: () => void this.submit() }, this.submitting ? "Sending…" : "Submit"))),
    ];
    this.root.replaceChildren(...parts.filter((part) => part !== null));
    if (hadFocus && !this.root.contains(document.activeElement)) this.root.focus();
  }

  /** Forgets an error line that no longer holds (the page is live again); drafts stay. */
  clearError() {
    if (!this.error || this.submitting) return;
    this.error = "";
    this.render();
  }

  askSkip() {
    this.confirmingSkip = true;
    this.render();
    // The confirmation opens above the footer, pushing it down: on a small screen its buttons
    // would land below the fold, and a phone does not scroll to a button focused by script.
    // Bring the whole confirmation into view, then focus without scrolling again.
    this.root.querySelector('[data-testid="skip-confirm"]')?.scrollIntoView({ block: "nearest" });
    /** @type {HTMLElement | null} */ (this.root.querySelector('[data-testid="skip-cancel"]'))?.focus({ preventScroll: true });
  }

  cancelSkip() {
    this.confirmingSkip = false;
    this.render();
    /** @type {HTMLElement | null} */ (this.root.querySelector('[data-testid="skip-question"]'))?.focus();
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
      saveDraft(this.drafts, this.form);
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
    if (this.form) refreshControls(this.root, this.form, this.submitting);
  }

  dismiss() {
    if (!this.bundle || !this.deps.onDismiss) return;
    const pendingId = this.bundle.pending_id;
    this.hide();
    this.deps.onDismiss(pendingId);
  }

  /** @param {KeyboardEvent} e */
  onKey(e) {
    if (this.modal && trapTab(this.root, e)) return;
    if (e.key === "Escape" && this.modal) {
      e.preventDefault();
      e.stopPropagation();
      if (this.confirmingSkip) this.cancelSkip();
      else this.dismiss();
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
      this.finish(pendingId, successOutcome(await this.deps.api.respond(pendingId, body), bundle.questions));
    } catch (err) {
      const outcome = errorOutcome(err, bundle.questions);
      if (outcome.kind !== "retry") {
        this.finish(pendingId, outcome);
        return;
      }
      this.submitting = false;
      this.error = outcome.error;
      if (this.bundle?.pending_id === pendingId) this.render();
    }
  }

  /**
   * @param {string} pendingId
   * @param {Outcome} outcome
   */
  finish(pendingId, outcome) {
    this.submitting = false;
    forgetDraft(this.drafts, pendingId);
    const hadFocus = this.root.contains(document.activeElement);
    if (this.bundle?.pending_id === pendingId) this.reset();
    if (hadFocus) this.giveBackFocus();
    this.deps.onClosed(pendingId, outcome);
  }
}
