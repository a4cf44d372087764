// What a respond call's result means for the person: the contract's outcomes (200, a lost race,
// 409 with the winner, 500 retryable or not, no connection) as the words the session view and
// the inbox show. Pure; imported by overlay.js and the tests.

import { describeResponse, responseFromRows } from "./answer-form.js";
import { humanError } from "./errors.js";

/** @typedef {import("./answer-form.js").Question} Question */
/**
 * @typedef {{kind: "answered" | "conflict" | "accepted", text: string, winner?: string}} Outcome
 *   what is shown after the question closed for a response
 */

/**
 * @param {any} res the 200 body
 * @param {Question[]} questions
 * @returns {Outcome}
 */
export function successOutcome(res, questions) {
  if (res && res.claimed === false) {
    // A kandev-shaped server reports a lost race as 200 with the winner's response.
    return { kind: "conflict", text: "This question was already answered.",
      winner: describeResponse(res.response, questions) };
  }
  if (res?.status === "rejected") {
    return { kind: "answered", text: questions.length > 1 ? "Questions skipped." : "Question skipped." };
  }
  return { kind: "answered", text: "Answer sent." };
}

/**
 * @param {any} e an ApiError
 * @param {Question[]} questions
 * @returns {Outcome | {kind: "retry", error: string}} a closing outcome, or the error to show
 *   while the answers stay in the form
 */
export function errorOutcome(e, questions) {
  if (e?.status === 409) {
    const winner = describeResponse(e.response, questions);
    return {
      kind: "conflict",
      text: winner ? "This question was already answered." : `This question is no longer active (${e.state ?? "closed"}).`,
      winner,
    };
  }
  if (e?.status >= 500 && !e.retryable) {
    return { kind: "accepted", text: "Your answer was accepted; do not send it again." };
  }
  if (e?.status === 0) {
    return { kind: "retry", error: `${humanError(e)} Your answers are kept here; send them again when it is back.` };
  }
  return { kind: "retry", error: e?.retryable
    ? `Not delivered (${e.code}). Your answers are kept here and can be sent again.`
    : `Not sent: ${e?.message ?? String(e)}${e?.field ? ` (${e.field})` : ""}` };
}

/**
 * A question this page showed closed without this page answering it: answered (or skipped) in
 * another tab or client, with what was given; or no longer open.
 * @param {any} bundle the bundle read again (null when the read failed)
 * @param {Question[]} questions
 * @returns {Outcome}
 */
export function elsewhereOutcome(bundle, questions) {
  const response = responseFromRows(bundle?.rows ?? []);
  if (response === null) {
    return { kind: "conflict", text: `This question is no longer open (${String(bundle?.state ?? "closed")}).` };
  }
  return { kind: "conflict", text: "This question was answered in another tab or client.",
    winner: describeResponse(response, questions) };
}
