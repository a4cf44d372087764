// The clarification answer form: one bundle's questions, the active step and each question's
// draft (one picked option, or custom text). Pure functions over a plain object, imported by the
// overlay view and the tests. The overlay renders it; nothing here touches the DOM or network.

/**
 * @typedef {{option_id: string, label: string, description?: string, default?: boolean}} Option
 * @typedef {{id: string, title?: string, prompt: string, options: Option[]}} Question
 * @typedef {{pending_id: string, state: string, questions: Question[], context?: string | null,
 *   session_id?: string, task_id?: string, turn_id?: string, expires_at?: string | null,
 *   on_expiry?: string | null, escalated_to?: string[] | null}} Bundle
 * @typedef {{selected: string | null, custom: string}} Draft
 * @typedef {{pendingId: string, questions: Question[], context: string, step: number,
 *   drafts: Record<string, Draft>}} AnswerForm
 */

/** Number keys pick options 1..6 (a question has at most six). */
const MAX_OPTION_KEYS = 6;

/**
 * @param {Bundle} bundle
 * @returns {AnswerForm}
 */
export function createForm(bundle) {
  /** @type {Record<string, Draft>} */
  const drafts = {};
  for (const q of bundle.questions) drafts[q.id] = { selected: null, custom: "" };
  return {
    pendingId: bundle.pending_id,
    questions: bundle.questions,
    context: bundle.context ?? "",
    step: 0,
    drafts,
  };
}

/**
 * @param {AnswerForm} form
 * @param {string} questionId
 */
export function isAnswered(form, questionId) {
  const d = form.drafts[questionId];
  return !!d && (d.selected !== null || d.custom.trim() !== "");
}

/** @param {AnswerForm} form */
export function canSubmit(form) {
  return form.questions.every((q) => isAnswered(form, q.id));
}

/**
 * Why Submit waits: the questions still without an answer, named by title (or number), in a
 * sentence; "" when every question is answered.
 * @param {AnswerForm} form
 */
export function submitHint(form) {
  const missing = form.questions
    .map((q, i) => ({ q, i }))
    .filter(({ q }) => !isAnswered(form, q.id))
    .map(({ q, i }) => q.title || (form.questions.length > 1 ? `question ${i + 1}` : "the question"));
  if (!missing.length) return "";
  const names = missing.length === 1 ? missing[0]
    : `${missing.slice(0, -1).join(", ")} and ${missing[missing.length - 1]}`;
  return `Answer ${names} to submit.`;
}

/**
 * @param {AnswerForm} form
 * @param {number} step
 * @returns {AnswerForm}
 */
export function goToStep(form, step) {
  const clamped = Math.max(0, Math.min(form.questions.length - 1, step));
  return clamped === form.step ? form : { ...form, step: clamped };
}

/**
 * @param {AnswerForm} form
 * @param {string} questionId
 * @param {Draft} draft
 * @returns {AnswerForm}
 */
function withDraft(form, questionId, draft) {
  return { ...form, drafts: { ...form.drafts, [questionId]: draft } };
}

/**
 * Picks an option: it replaces any custom text, and on a multi-question bundle moves on to the
 * next step (the last step stays so Submit is at hand).
 * @param {AnswerForm} form
 * @param {string} questionId
 * @param {string} optionId
 * @returns {AnswerForm}
 */
export function selectOption(form, questionId, optionId) {
  const question = form.questions.find((q) => q.id === questionId);
  if (!question || !question.options.some((o) => o.option_id === optionId)) return form;
  const next = withDraft(form, questionId, { selected: optionId, custom: "" });
  const index = form.questions.indexOf(question);
  return index === form.step ? goToStep(next, index + 1) : next;
}

/**
 * Types custom text: non-empty text becomes the answer and deselects the picked option; emptying
 * the draft clears the answer.
 * @param {AnswerForm} form
 * @param {string} questionId
 * @param {string} text
 * @returns {AnswerForm}
 */
export function setCustomText(form, questionId, text) {
  const draft = form.drafts[questionId];
  if (!draft) return form;
  const selected = text.trim() !== "" ? null : draft.selected;
  return withDraft(form, questionId, { selected: text === "" ? null : selected, custom: text });
}

/**
 * The option a number key picks on the active step, or null.
 * @param {AnswerForm} form
 * @param {string} key a KeyboardEvent.key
 * @returns {{questionId: string, optionId: string} | null}
 */
export function optionForKey(form, key) {
  if (!/^[1-9]$/.test(key)) return null;
  const n = Number(key);
  if (n > MAX_OPTION_KEYS) return null;
  const question = form.questions[form.step];
  const option = question?.options[n - 1];
  return option ? { questionId: question.id, optionId: option.option_id } : null;
}

/**
 * The respond body for an answer (one entry per question, in question order).
 * @param {AnswerForm} form
 */
export function answerBody(form) {
  return {
    answers: form.questions.map((q) => {
      const d = form.drafts[q.id];
      const custom = d.custom.trim();
      return {
        question_id: q.id,
        selected_options: custom === "" && d.selected ? [d.selected] : [],
        custom_text: custom,
      };
    }),
    rejected: false,
  };
}

/** The respond body for Skip. */
export function skipBody() {
  return { rejected: true, reject_reason: "User skipped" };
}

/**
 * Human text for a recorded response (the winner shown after a 409).
 * @param {{answers?: Array<{question_id: string, selected_options?: string[], custom_text?: string}>,
 *   rejected?: boolean, reject_reason?: string} | null | undefined} response
 * @param {Question[]} questions
 * @returns {string}
 */
export function describeResponse(response, questions) {
  if (!response) return "";
  if (response.rejected) {
    return "Skipped";
  }
  return (response.answers ?? []).map((a) => {
    const q = questions.find((x) => x.id === a.question_id);
    const labels = (a.selected_options ?? []).map(
      (id) => q?.options.find((o) => o.option_id === id)?.label ?? id,
    );
    const parts = [...labels, ...(a.custom_text ? [a.custom_text] : [])];
    return `${q?.title || q?.prompt || a.question_id}: ${parts.join(", ") || "(no answer)"}`;
  }).join("; ");
}

/**
 * The recorded response read back from a bundle's rows (each answered row carries its
 * `metadata.response`; rejected rows mean the bundle was skipped), or null while none is.
 * @param {Array<{metadata?: Record<string, any> | null}>} rows
 */
export function responseFromRows(rows) {
  const answers = rows.filter((r) => r.metadata?.status === "answered" && r.metadata?.response)
    .map((r) => /** @type {any} */ (r.metadata).response);
  if (answers.length) return { answers, rejected: false };
  if (rows.some((r) => r.metadata?.status === "rejected")) return { rejected: true };
  return null;
}
