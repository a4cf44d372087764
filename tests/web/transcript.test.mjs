// The session transcript model and the choice of candidate clarification bundles.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  applyTranscriptEvent,
  candidateBundles,
  emptyTranscript,
  messageFromPayload,
  transcriptItems,
  upsertMessage,
  upsertTurn,
} from "../../src/clarion/web/js/transcript.js";

const turn = (id, started_at, completed_at = null) => ({ id, session_id: "s1", started_at, created_at: started_at, completed_at });
const msg = (id, turn_id, created_at, extra = {}) => ({ id, session_id: "s1", turn_id, created_at, type: "message",
  author_type: "agent", content: id, ...extra });

test("turn boundaries frame their messages in turn order", () => {
  let t = emptyTranscript();
  t = upsertTurn(t, turn("t2", "2026-01-02", null));
  t = upsertTurn(t, turn("t1", "2026-01-01", "2026-01-01T01"));
  t = upsertMessage(t, msg("m2", "t2", "2026-01-02T01"));
  t = upsertMessage(t, msg("m1", "t1", "2026-01-01T00:30"));
  const kinds = transcriptItems(t).map((i) => (i.kind === "message" ? i.message.id : `${i.kind}:${i.turn.id}`));
  assert.deepEqual(kinds, ["turn-start:t1", "m1", "turn-end:t1", "turn-start:t2", "m2"]);
});

test("messages of a turn not yet listed come last", () => {
  let t = upsertTurn(emptyTranscript(), turn("t1", "2026-01-01"));
  t = upsertMessage(t, msg("late", "unknown-turn", "2026-01-01"));
  const last = transcriptItems(t).at(-1);
  assert.equal(last.kind === "message" && last.message.id, "late");
});

test("live notifications add, update and delete messages of this session only", () => {
  let t = emptyTranscript();
  t = applyTranscriptEvent(t, "s1", "session.message.added", { message_id: "m1", session_id: "s1", content: "a",
    pending_action: null });
  assert.equal(t.messages[0].id, "m1", "kandev's message_id is accepted");
  assert.equal("pending_action" in t.messages[0], false, "pending fields belong to the store");
  t = applyTranscriptEvent(t, "s1", "session.message.updated", { id: "m1", session_id: "s1", content: "b" });
  assert.equal(t.messages.length, 1);
  assert.equal(t.messages[0].content, "b");
  t = applyTranscriptEvent(t, "other", "session.message.added", { id: "m2", session_id: "s1" });
  t = applyTranscriptEvent(t, "s1", "session.message.added", { id: "m3", session_id: "s2" });
  assert.equal(t.messages.length, 1);
  t = applyTranscriptEvent(t, "s1", "session.message.deleted", { id: "m1", session_id: "s1" });
  assert.equal(t.messages.length, 0);
});

test("turn notifications start and complete turns", () => {
  let t = applyTranscriptEvent(emptyTranscript(), "s1", "session.turn.started", turn("t1", "2026-01-01"));
  t = applyTranscriptEvent(t, "s1", "session.turn.completed", { ...turn("t1", "2026-01-01"), completed_at: "2026-01-01T02" });
  assert.equal(t.turns.length, 1);
  assert.equal(t.turns[0].completed_at, "2026-01-01T02");
});

test("a payload without an id is not a message", () => {
  assert.equal(messageFromPayload({ session_id: "s1" }), null);
});

const question = (id, pending_id, created_at, status) => msg(id, "t1", created_at, {
  type: "clarification_request", metadata: { pending_id, ...(status === undefined ? {} : { status }) } });

test("candidate bundles are ordered newest first and skip fully terminal bundles", () => {
  const messages = [
    question("q1", "old", "2026-01-01", "pending"),
    question("q2", "answered", "2026-01-02", "answered"),
    question("q3", "new", "2026-01-03", undefined),
    question("q4", "new", "2026-01-03", undefined),
    msg("plain", "t1", "2026-01-04"),
  ];
  assert.deepEqual(candidateBundles(messages), ["new", "old"]);
});

test("a bundle with one terminal and one pending sibling is still a candidate", () => {
  const messages = [question("a", "mixed", "1", "answered"), question("b", "mixed", "1", "pending")];
  assert.deepEqual(candidateBundles(messages), ["mixed"]);
});

test("an agent start is one line, not a turn that completes before the first turn starts", async () => {
  const { emptyTranscript: empty, upsertTurn: addTurn, transcriptItems: items } = await import("../../src/clarion/web/js/transcript.js");
  let t = addTurn(empty(), { id: "life", started_at: "2026-01-01T00:00", completed_at: "2026-01-01T00:00:01", metadata: { lifecycle_only: true } });
  t = addTurn(t, { id: "t1", started_at: "2026-01-01T00:00:02", completed_at: null });
  assert.deepEqual(items(t).map((i) => `${i.kind}:${"turn" in i ? i.turn.id : ""}`), ["turn-start:life", "turn-start:t1"]);
});

test("a question answered after its turn ended reads after what the agent said meanwhile", async () => {
  const { emptyTranscript: empty, upsertTurn: addTurn, upsertMessage: add, transcriptItems: items } =
    await import("../../src/clarion/web/js/transcript.js");
  let t = addTurn(empty(), { id: "t1", started_at: "2026-01-01T00:00", completed_at: "2026-01-01T00:02" });
  t = addTurn(t, { id: "t2", started_at: "2026-01-01T00:10", completed_at: null });
  t = add(t, { id: "q", turn_id: "t1", type: "clarification_request", created_at: "2026-01-01T00:01",
    updated_at: "2026-01-01T00:09", metadata: { status: "answered" } });
  t = add(t, { id: "bye", turn_id: "t1", type: "message", created_at: "2026-01-01T00:01:30" });
  t = add(t, { id: "resumed", turn_id: "t2", type: "message", created_at: "2026-01-01T00:10:01" });
  const order = items(t).map((i) => (i.kind === "message" ? `${i.message.id}${i.answeredLater ? "*" : ""}`
    : i.kind === "answer" ? `answer:${i.message.id}` : `${i.kind}:${i.turn.id}`));
  assert.deepEqual(order, ["turn-start:t1", "q*", "bye", "turn-end:t1", "answer:q", "turn-start:t2", "resumed"]);
});

test("an agent's JSON reply and technical failures read as words", async () => {
  const { isTechnicalFailure, readableAgentText, readableReply } = await import("../../src/clarion/web/js/transcript.js");
  assert.equal(readableReply('You answered: {"db": {"selected_options": ["postgres"]}, "lang": {"selected_options": [], "custom_text": "Go"}}'),
    "You answered: db: postgres; lang: Go");
  assert.equal(readableReply('You answered: {"rejected": true, "reject_reason": "User skipped"}'),
    "You skipped the question (User skipped).");
  assert.equal(readableReply('You answered: {"rejected": true, "reject_reason": ""}'), "You skipped the question.");
  assert.equal(readableReply("Plain {not json"), "Plain {not json");
  assert.equal(readableReply("Nothing to parse"), "Nothing to parse");
  assert.match(readableAgentText("Could not ask the question: SSE stream ended without a response"),
    /^The agent's wait for your answer was cut short: the server restarted while the agent waited\. The question is still open: answer it/);
  assert.doesNotMatch(readableAgentText("Could not ask the question: SSE stream ended without a response"),
    /send your prompt again/);
  assert.match(readableAgentText("Agent failed: SSE stream ended without a response"),
    /^Agent failed: the connection between the agent and Clarion was cut: the server restarted/);
  assert.equal(isTechnicalFailure("Could not ask the question: SSE stream ended without a response"), true);
  assert.equal(isTechnicalFailure("Could not ask the question: no such tool"), false);
  assert.equal(isTechnicalFailure("You answered: db: postgres"), false);
});
