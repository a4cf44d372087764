// Answers typed but not sent, kept in localStorage per bundle so a reload (or a phone that
// dropped the tab) does not lose them. Pure functions over a Storage-like object; imported by
// overlay.js, which saves on every change and forgets once the bundle is answered.

/** @typedef {import("./answer-form.js").AnswerForm} AnswerForm */
/** @typedef {{getItem(key: string): string | null, setItem(key: string, value: string): void,
 *   removeItem(key: string): void}} DraftStorage */

const PREFIX = "clarion.draft.";

/**
 * Saves the form's drafts and step; a form with nothing typed or picked removes the entry.
 * @param {DraftStorage} storage
 * @param {AnswerForm} form
 */
export function saveDraft(storage, form) {
  const touched = Object.values(form.drafts).some((d) => d.selected !== null || d.custom !== "");
  try {
    if (!touched) storage.removeItem(PREFIX + form.pendingId);
    else storage.setItem(PREFIX + form.pendingId, JSON.stringify({ step: form.step, drafts: form.drafts }));
  } catch {
    // A full or refused storage only loses the convenience, never the answer on screen.
  }
}

/**
 * A fresh form with what was saved for its bundle put back: only drafts of questions the bundle
 * still has, and a picked option only if the question still offers it.
 * @param {DraftStorage} storage
 * @param {AnswerForm} form
 * @returns {AnswerForm}
 */
export function restoreDraft(storage, form) {
  /** @type {any} */
  let saved = null;
  try {
    saved = JSON.parse(storage.getItem(PREFIX + form.pendingId) ?? "null");
  } catch {
    return form;
  }
  if (!saved || typeof saved !== "object" || typeof saved.drafts !== "object" || !saved.drafts) return form;
  const drafts = { ...form.drafts };
  for (const q of form.questions) {
    const d = saved.drafts[q.id];
    if (!d || typeof d !== "object") continue;
    const selected = typeof d.selected === "string" && q.options.some((o) => o.option_id === d.selected) ? d.selected : null;
    drafts[q.id] = { selected, custom: typeof d.custom === "string" ? d.custom : "" };
  }
  const step = Number.isInteger(saved.step) ? Math.max(0, Math.min(form.questions.length - 1, saved.step)) : form.step;
  return { ...form, drafts, step };
}

/**
 * @param {DraftStorage} storage
 * @param {string} pendingId
 */
export function forgetDraft(storage, pendingId) {
  try {
    storage.removeItem(PREFIX + pendingId);
  } catch {
    // Nothing to do: a stale draft is dropped when its bundle is no longer offered.
  }
}
