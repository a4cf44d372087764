// Pieces of the question overlay, built from plain values: the step chips, one question's
// option group, and the "skip all?" confirmation. Imported by overlay.js, which owns the form
// and passes callbacks.

import { canSubmit, isAnswered, submitHint } from "./answer-form.js";
import { h } from "./dom.js";
import { deadlineWords, escalationWords } from "./inbox.js";
import { renderInlineMarkdown } from "./markdown.js";
import { fullStamp } from "./time-words.js";

/** @typedef {import("./answer-form.js").AnswerForm} AnswerForm */
/** @typedef {import("./answer-form.js").Bundle} Bundle */

/**
 * The question's waiting policy, as the inbox line shows it: its deadline ("expires in 3 h,
 * then Skip", the time on hover) and whom it was escalated to; null without either.
 * @param {Bundle} bundle
 */
export function waitingLine(bundle) {
  const deadline = deadlineWords(bundle, Date.now());
  const escalated = escalationWords(bundle);
  if (!deadline && !escalated) return null;
  return h("p", { class: "notice question-waiting", testid: "question-waiting" },
    deadline ? h("time", { testid: "question-deadline", datetime: String(bundle.expires_at),
      title: fullStamp(String(bundle.expires_at)), text: deadline }) : null,
    escalated ? h("span", { class: "badge inbox-escalated", testid: "question-escalated", text: escalated }) : null);
}
/** @typedef {import("./answer-form.js").Question} Question */

/**
 * The stepper: one chip per question, ✓ (class `answered`) once it has an answer.
 * @param {AnswerForm} form
 * @param {boolean} disabled
 * @param {(index: number) => () => void} goTo
 */
export function stepChips(form, disabled, goTo) {
  return h("nav", { class: "stepper", "aria-label": "Questions" }, form.questions.map((q, i) => h("button", {
    type: "button", testid: `step-${i + 1}`,
    class: `step${i === form.step ? " active" : ""}${isAnswered(form, q.id) ? " answered" : ""}`,
    "aria-current": i === form.step ? "step" : null, disabled,
    onClick: goTo(i),
  }, `${i + 1}. ${q.title || `Question ${i + 1}`}`)));
}

/**
 * A question's options as a group named by its prompt (`promptId`); the picked one is pressed
 * and shows a ✓; keys 1-6 are shown on the first six.
 * @param {Question} question
 * @param {string | null} selected
 * @param {string} promptId
 * @param {boolean} disabled
 * @param {(optionId: string) => void} onPick
 */
export function optionGroup(question, selected, promptId, disabled, onPick) {
  return h("div", { class: "options", role: "group", "aria-labelledby": promptId }, question.options.map((o, i) => h("button", {
    type: "button", testid: `option-${question.id}-${o.option_id}`,
    class: `option${selected === o.option_id ? " selected" : ""}`,
    "aria-pressed": selected === o.option_id ? "true" : "false", disabled,
    title: i < 6 ? `Shortcut: ${i + 1}` : null,
    onClick: () => onPick(o.option_id),
  },
  h("span", { class: "option-label" }, i < 6 ? h("kbd", {}, String(i + 1)) : null,
    h("span", { testid: "option-label" }, ...renderInlineMarkdown(o.label)),
    // The option an expiry chooses, named before it does.
    o.default ? h("span", { class: "badge default-mark", testid: "option-default", text: "default" }) : null,
    selected === o.option_id ? h("span", { class: "option-check", "aria-hidden": "true", text: "✓" }) : null),
  o.description ? h("span", { class: "option-description", testid: "option-description" }, ...renderInlineMarkdown(o.description)) : null)));
}

/**
 * The "skip all?" question: Skip tells the agent the person declined every question of the
 * bundle, so it is asked first.
 * @param {number} count how many questions the bundle has
 * @param {() => void} onCancel
 * @param {() => void} onConfirm
 */
export function skipConfirmation(count, onCancel, onConfirm) {
  const what = count > 1 ? `Skip all ${count} questions?` : "Skip this question?";
  return h("div", { class: "notice skip-confirm", testid: "skip-confirm", role: "alertdialog", "aria-label": what },
    h("span", { text: `${what} The agent is told you skipped ${count > 1 ? "them" : "it"} and goes on without an answer.` }),
    h("span", { class: "confirm-actions" },
      h("button", { type: "button", testid: "skip-cancel", onClick: onCancel }, "Keep answering"),
      h("button", { type: "button", class: "danger", testid: "skip-confirm-button", onClick: onConfirm },
        count > 1 ? "Skip questions" : "Skip question")));
}

/**
 * Re-reads the drafts into an overlay's buttons, chips and hint without rebuilding it (typing
 * keeps its caret).
 * @param {HTMLElement} root
 * @param {AnswerForm} form
 * @param {boolean} submitting
 */
export function refreshControls(root, form, submitting) {
  const question = form.questions[form.step];
  for (const o of question.options) {
    const btn = root.querySelector(`[data-testid="option-${CSS.escape(question.id)}-${CSS.escape(o.option_id)}"]`);
    const on = form.drafts[question.id].selected === o.option_id;
    btn?.classList.toggle("selected", on);
    btn?.setAttribute("aria-pressed", on ? "true" : "false");
    if (!on) btn?.querySelector(".option-check")?.remove();
  }
  form.questions.forEach((q, i) => {
    root.querySelector(`[data-testid="step-${i + 1}"]`)?.classList.toggle("answered", isAnswered(form, q.id));
  });
  const submit = /** @type {HTMLButtonElement | null} */ (root.querySelector('[data-testid="submit-answer"]'));
  if (submit) submit.disabled = submitting || !canSubmit(form);
  const hintEl = /** @type {HTMLElement | null} */ (root.querySelector('[data-testid="submit-hint"]'));
  if (hintEl) {
    const hint = submitHint(form);
    hintEl.textContent = hint;
    hintEl.hidden = !hint;
  }
}
