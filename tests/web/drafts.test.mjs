// Typed answers kept per bundle across a reload.
import { test } from "node:test";
import assert from "node:assert/strict";

import { createForm, selectOption, setCustomText } from "../../src/clarion/web/js/answer-form.js";
import { forgetDraft, restoreDraft, saveDraft } from "../../src/clarion/web/js/drafts.js";

const memory = () => {
  /** @type {Map<string, string>} */
  const m = new Map();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v), removeItem: (k) => void m.delete(k), m };
};
const bundle = { pending_id: "p1", state: "active_live", questions: [
  { id: "db", prompt: "DB?", options: [{ option_id: "pg", label: "PostgreSQL" }] },
  { id: "lang", prompt: "Language?", options: [{ option_id: "py", label: "Python" }] },
] };

test("a saved draft comes back on a fresh form of the same bundle, step included", () => {
  const store = memory();
  const form = setCustomText(selectOption(createForm(bundle), "db", "pg"), "lang", "Rust, please");
  saveDraft(store, form);
  const back = restoreDraft(store, createForm(bundle));
  assert.equal(back.drafts.db.selected, "pg");
  assert.equal(back.drafts.lang.custom, "Rust, please");
  assert.equal(back.step, form.step);
});

test("an option the question no longer offers is not restored, and a forgotten draft is gone", () => {
  const store = memory();
  store.setItem("clarion.draft.p1", JSON.stringify({ step: 9, drafts: { db: { selected: "oracle", custom: "" } } }));
  const back = restoreDraft(store, createForm(bundle));
  assert.equal(back.drafts.db.selected, null);
  assert.equal(back.step, 1);
  forgetDraft(store, "p1");
  assert.equal(store.m.size, 0);
});

test("an untouched form stores nothing and a corrupt entry is ignored", () => {
  const store = memory();
  saveDraft(store, createForm(bundle));
  assert.equal(store.m.size, 0);
  store.setItem("clarion.draft.p1", "{not json");
  assert.deepEqual(restoreDraft(store, createForm(bundle)), createForm(bundle));
});
