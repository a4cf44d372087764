// The clarification answer form: drafts, stepper, keys and respond bodies.
import { test } from "node:test";
import assert from "node:assert/strict";

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
  submitHint,
} from "../../src/clarion/web/js/answer-form.js";

const q = (id, ...opts) => ({ id, title: id.toUpperCase(), prompt: `Pick ${id}`,
  options: opts.map((o) => ({ option_id: o, label: o.toUpperCase(), description: `about ${o}` })) });
const bundle = { pending_id: "p1", state: "active_live", context: "ctx",
  questions: [q("db", "postgres", "mongodb", "sqlite"), q("language", "python", "go", "rust"), q("deploy", "docker", "bare-metal")] };

test("submit stays disabled until every question is answered", () => {
  let f = createForm(bundle);
  assert.equal(canSubmit(f), false);
  f = selectOption(f, "db", "postgres");
  f = selectOption(f, "language", "go");
  assert.equal(canSubmit(f), false);
  f = setCustomText(f, "deploy", "k8s");
  assert.equal(canSubmit(f), true);
});

test("picking an option on the active step advances to the next step", () => {
  let f = selectOption(createForm(bundle), "db", "sqlite");
  assert.equal(f.step, 1);
  f = selectOption(f, "language", "rust");
  f = selectOption(f, "deploy", "docker");
  assert.equal(f.step, 2, "the last step stays");
});

test("revising an earlier step does not move the stepper", () => {
  let f = goToStep(createForm(bundle), 2);
  f = selectOption(f, "db", "mongodb");
  assert.equal(f.step, 2);
  assert.equal(f.drafts.db.selected, "mongodb");
});

test("the stepper is clamped to the questions", () => {
  const f = createForm(bundle);
  assert.equal(goToStep(f, -1).step, 0);
  assert.equal(goToStep(f, 9).step, 2);
});

test("typing custom text deselects the option and emptying it clears the answer", () => {
  let f = selectOption(createForm(bundle), "db", "postgres");
  f = setCustomText(f, "db", "CockroachDB\nwith replicas");
  assert.equal(f.drafts.db.selected, null);
  assert.equal(isAnswered(f, "db"), true);
  f = setCustomText(f, "db", "");
  assert.equal(isAnswered(f, "db"), false);
});

test("picking an option replaces the custom text", () => {
  let f = setCustomText(createForm(bundle), "db", "other");
  f = selectOption(f, "db", "sqlite");
  assert.deepEqual(f.drafts.db, { selected: "sqlite", custom: "" });
});

test("an unknown option is ignored", () => {
  const f = createForm(bundle);
  assert.equal(selectOption(f, "db", "oracle"), f);
});

test("number keys pick options on the active step only", () => {
  let f = createForm(bundle);
  assert.deepEqual(optionForKey(f, "2"), { questionId: "db", optionId: "mongodb" });
  f = goToStep(f, 2);
  assert.deepEqual(optionForKey(f, "2"), { questionId: "deploy", optionId: "bare-metal" });
  assert.equal(optionForKey(f, "3"), null, "no third option on this step");
  assert.equal(optionForKey(f, "7"), null);
  assert.equal(optionForKey(f, "a"), null);
});

test("the answer body has one entry per question in question order", () => {
  let f = createForm(bundle);
  f = selectOption(f, "language", "go");
  f = setCustomText(f, "deploy", "  nomad  ");
  f = selectOption(f, "db", "postgres");
  assert.deepEqual(answerBody(f), {
    answers: [
      { question_id: "db", selected_options: ["postgres"], custom_text: "" },
      { question_id: "language", selected_options: ["go"], custom_text: "" },
      { question_id: "deploy", selected_options: [], custom_text: "nomad" },
    ],
    rejected: false,
  });
});

test("skip sends a rejection with the user-skipped reason", () => {
  assert.deepEqual(skipBody(), { rejected: true, reject_reason: "User skipped" });
});

test("the winning response is described with option labels", () => {
  const text = describeResponse({ answers: [{ question_id: "db", selected_options: ["postgres"], custom_text: "" }],
    rejected: false }, bundle.questions);
  assert.equal(text, "DB: POSTGRES");
  assert.equal(describeResponse({ rejected: true, reject_reason: "User skipped" }, []), "Skipped");
});

test("the submit hint names the questions still unanswered", () => {
  let f = createForm(bundle);
  assert.equal(submitHint(f), "Answer DB, LANGUAGE and DEPLOY to submit.");
  f = setCustomText(f, "db", "my own");
  f = selectOption(f, "deploy", "docker");
  assert.equal(submitHint(f), "Answer LANGUAGE to submit.");
  f = selectOption(f, "language", "go");
  assert.equal(submitHint(f), "");
});
