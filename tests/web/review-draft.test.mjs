// The review gathered on the Changes view: comments, summary, the request body, kept drafts.
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  REMOVED_LINE, addComment, canSend, commentsAt, countsWords, draftWords, emptyDraft, loadDraft,
  removeComment, reviewBody, reviewErrorWords, saveDraft, totalsWords,
} from "../../src/clarion/web/js/review-draft.js";

const memory = () => {
  /** @type {Map<string, string>} */
  const m = new Map();
  return { getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v), removeItem: (k) => void m.delete(k), m };
};

test("comments gather in the order written and become the review body with the summary", () => {
  let draft = addComment(emptyDraft(), { path: "src/a.py", line: 12, side: "new", body: " Use a constant " }, "c1");
  draft = addComment(draft, { path: "README.md", line: null, side: "new", body: "Mention the flag" }, "c2");
  draft = { ...draft, summary: "  Close, two fixes.  " };
  assert.deepEqual(reviewBody(draft), {
    comments: [{ path: "src/a.py", line: 12, body: "Use a constant" }, { path: "README.md", body: "Mention the flag" }],
    summary: "Close, two fixes.",
  });
});

test("a comment on a removed line says so, with the old file's line number", () => {
  const draft = addComment(emptyDraft(), { path: "a.py", line: 4, side: "old", body: "Why remove this?" }, "c1");
  assert.deepEqual(reviewBody(draft).comments, [{ path: "a.py", line: 4, body: `${REMOVED_LINE}Why remove this?` }]);
  assert.equal(commentsAt(draft, "a.py", 4, "old").length, 1);
  assert.equal(commentsAt(draft, "a.py", 4, "new").length, 0);
});

test("a blank comment adds nothing, and an empty draft cannot be sent", () => {
  const draft = addComment(emptyDraft(), { path: "a", line: 1, side: "new", body: "   " }, "c1");
  assert.equal(draft.comments.length, 0);
  assert.equal(canSend(draft), false);
  assert.equal(canSend({ ...draft, summary: "ok" }), true);
  assert.deepEqual(reviewBody({ ...draft, summary: "  " }), { comments: [] });
});

test("a removed comment leaves the others", () => {
  let draft = addComment(emptyDraft(), { path: "a", line: 1, side: "new", body: "one" }, "c1");
  draft = addComment(draft, { path: "a", line: 2, side: "new", body: "two" }, "c2");
  assert.deepEqual(removeComment(draft, "c1").comments.map((c) => c.id), ["c2"]);
});

test("a draft is kept per task across reloads, and an emptied one is forgotten", () => {
  const store = memory();
  const draft = { ...addComment(emptyDraft(), { path: "a", line: 1, side: "new", body: "x" }, "c1"), summary: "s" };
  saveDraft(store, "t1", draft);
  assert.deepEqual(loadDraft(store, "t1"), draft);
  assert.deepEqual(loadDraft(store, "t2"), emptyDraft());
  saveDraft(store, "t1", emptyDraft());
  assert.equal(store.m.size, 0);
});

test("an unreadable stored draft is an empty one, and malformed comments are dropped", () => {
  const store = memory();
  store.setItem("clarion.review.t1", "{not json");
  assert.deepEqual(loadDraft(store, "t1"), emptyDraft());
  store.setItem("clarion.review.t1", JSON.stringify({ comments: [{ id: "x" }, { id: "c", path: "p", line: 2, side: "new", body: "b" }], summary: 3 }));
  assert.deepEqual(loadDraft(store, "t1"), { comments: [{ id: "c", path: "p", line: 2, side: "new", body: "b" }], summary: "" });
  assert.deepEqual(loadDraft(null, "t1"), emptyDraft());
});

test("a busy agent's refusal says why and that the review is kept", () => {
  const words = reviewErrorWords({ status: 409, code: "session_busy", message: "busy" });
  assert.match(words, /agent is busy/);
  assert.match(words, /kept/);
  assert.match(reviewErrorWords({ status: 404, code: "not_found" }), /no worktree/);
  assert.match(reviewErrorWords({ status: 400, code: "invalid_request", message: "path escapes" }), /path escapes/);
});

test("files, totals and the draft read in words", () => {
  assert.equal(countsWords({ additions: 3, deletions: 1 }), "+3 −1");
  assert.equal(countsWords({ binary: true }), "binary");
  assert.equal(totalsWords({ files: [{}, {}], total_additions: 5, total_deletions: 0 }), "2 files changed, +5 −0");
  assert.equal(totalsWords({ files: [] }), "No changes yet");
  assert.equal(draftWords(emptyDraft()), "No comments yet: click a line to comment");
  assert.equal(draftWords(addComment(emptyDraft(), { path: "a", line: 1, side: "new", body: "x" }, "c")), "1 comment");
});
