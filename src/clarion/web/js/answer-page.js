// The answer page (/a/<token>): one question bundle, read and answered with the link's token
// as the only credential. It loads only the main UI's Markdown renderer (text never becomes
// HTML: the renderer builds elements with textContent), and keeps one mark in localStorage: that
// this browser's answer through the link was recorded, so reopening it says "You answered".

import { el, linkPage, loadLinked, outcome, ownMarks, reveal, show } from "./link-page.js";
import { renderInlineMarkdown, renderMarkdown } from "./markdown.js";

/** @typedef {{option_id: string, label: string, description?: string, default?: boolean}} Option */
/** @typedef {{id: string, title?: string, prompt: string, options: Option[]}} Question */
/** @typedef {{question_id: string, selected_options: string[], custom_text: string}} Answer */
/** @typedef {{answers: Answer[], rejected: boolean, reject_reason: string}} Reply */
/**
 * @typedef {{pending_id: string, state: string, questions: Question[], context: string,
 *   task: {id: string, title: string, description: string}, response: Reply | null,
 *   answered_by?: string | null, expires_at?: string | null, on_expiry?: string | null}} Linked
 */

const ACTIVE = new Set(["active_live", "active_detached"]);
const SKIP_REASON = "Skipped from an answer link";

const { page, api } = linkPage("answer-page", "a");
const own = ownMarks("clarion.link-answered.");

/** @param {string} source @param {Record<string, string>} attrs */
function markdown(source, attrs) {
  return el("div", { class: "prose markdown", ...attrs }, renderMarkdown(source));
}

/** @param {Linked} bundle */
function contextCards(bundle) {
  const cards = [];
  const task = el("section", { class: "card", "data-testid": "answer-task" }, [
    el("p", { class: "label" }, ["Task"]),
    el("h1", { "data-testid": "answer-task-title" }, [bundle.task.title || "Untitled task"]),
  ]);
  if (bundle.task.description) {
    task.append(markdown(bundle.task.description, { "data-testid": "answer-task-description" }));
  }
  cards.push(task);
  if (bundle.context) {
    cards.push(el("section", { class: "card", "data-testid": "answer-context" }, [
      el("p", { class: "label" }, ["The agent says"]),
      markdown(bundle.context, {}),
    ]));
  }
  return cards;
}

/**
 * When the question expires and what happens then: "Answer by 14:05 (in 3 min). If no one
 * answers by then, the agent gets the default answer: SQLite." Null without a deadline.
 * @param {Linked} bundle
 */
function deadlineCard(bundle) {
  if (!bundle.expires_at) return null;
  const at = new Date(bundle.expires_at);
  if (Number.isNaN(at.getTime())) return null;
  const minutes = Math.max(0, Math.round((at.getTime() - Date.now()) / 60000));
  const left = minutes >= 60 ? `${Math.round(minutes / 60)} h` : minutes >= 1 ? `${minutes} min` : "less than a minute";
  const when = at.toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  const defaults = bundle.questions.map((q) => q.options.find((o) => o.default)?.label).filter(Boolean);
  const then = bundle.on_expiry === "default"
    ? `the agent gets the default answer${defaults.length ? `: ${defaults.join(", ")}` : ""}.`
    : bundle.on_expiry === "skip" ? "the question is skipped and the agent goes on without an answer."
      : "the question stays open.";
  const time = el("time", { datetime: bundle.expires_at, "data-testid": "answer-deadline-time" }, [`${when} (in ${left})`]);
  return el("section", { class: "card deadline", "data-testid": "answer-deadline" }, [
    el("p", { class: "label" }, ["Deadline"]),
    el("p", {}, ["Answer by ", time, `. If no one answers by then, ${then}`]),
  ]);
}

/** @param {Question[]} questions @param {Reply} response @param {boolean} [byPolicy] */
function winnerList(questions, response, byPolicy = false) {
  if (response.rejected) {
    return el("p", { "data-testid": "answer-winner" }, [
      `Skipped${response.reject_reason ? `: ${response.reject_reason}` : "."}`,
    ]);
  }
  const list = el("ul", { class: "winner", "data-testid": "answer-winner" });
  for (const answer of response.answers) {
    const question = questions.find((q) => q.id === answer.question_id);
    const labels = answer.selected_options.map((id) => {
      const option = question?.options.find((o) => o.option_id === id);
      return `${option?.label ?? id}${byPolicy && option?.default ? ", the default" : ""}`;
    });
    if (answer.custom_text) labels.push(`“${answer.custom_text}”`);
    const name = question?.title || question?.prompt || answer.question_id;
    list.append(el("li", {}, [`${name}: ${labels.join(", ") || "no answer"}`]));
  }
  return list;
}

/**
 * Who answered, in words: the expiry policy, this browser through this link, or someone else.
 * @param {Linked} bundle @param {Reply | null} winner
 */
function takenWords(bundle, winner) {
  if (!winner) {
    return bundle.state === "superseded_history"
      ? { title: "Set aside", text: "A newer message to the agent set this question aside: it can no longer be answered." }
      : { title: "No longer open", text: "This question is no longer waiting for an answer." };
  }
  if (bundle.answered_by === "policy") {
    return { title: "Answered by the expiry policy",
      text: winner.rejected ? "No one answered in time, so the expiry policy skipped it:"
        : "No one answered in time, so the expiry policy answered with the default:" };
  }
  if (own.here(bundle.pending_id)) {
    return { title: "You answered", text: "You answered this question through this link. This is the answer the agent got:" };
  }
  return { title: "Already answered", text: "Someone answered this question before you. This is the answer the agent got:" };
}

/** @param {Linked} bundle @param {Reply | null} winner */
function showTaken(bundle, winner) {
  const words = takenWords(bundle, winner);
  const card = outcome(words.title, words.text, "answer-already", "taken");
  card.dataset.by = !winner ? "none" : bundle.answered_by === "policy" ? "policy"
    : own.here(bundle.pending_id) ? "you" : "someone";
  if (winner) card.append(winnerList(bundle.questions, winner, bundle.answered_by === "policy"));
  show(page, "taken", [...contextCards(bundle), card]);
  reveal(card);
}

/** @param {Linked} bundle @param {Reply} sent */
function showDone(bundle, sent) {
  const card = outcome(
    sent.rejected ? "Skipped" : "Answer sent",
    sent.rejected
      ? "The agent was told you skipped these questions."
      : "The agent has your answer and continues.",
    "answer-done",
    "ok",
  );
  card.append(winnerList(bundle.questions, sent));
  show(page, "answered", [...contextCards(bundle), card]);
  reveal(card);
}

/** @param {Question} question @param {number} index */
function questionFieldset(question, index) {
  const name = `q${index}`;
  const set = el("fieldset", { class: "card", "data-testid": "answer-question", "data-question-id": question.id });
  const legend = el("legend", {}, [question.title || `Question ${index + 1}`]);
  set.append(legend);
  if (question.prompt && question.prompt !== question.title) {
    set.append(markdown(question.prompt, { "data-testid": "answer-prompt" }));
  }
  for (const option of question.options) {
    const input = el("input", { type: "radio", name, value: option.option_id });
    const text = el("span", {}, [el("span", { "data-testid": "answer-option-label" }, renderInlineMarkdown(option.label))]);
    if (option.default) text.append(" ", el("span", { class: "default-mark", "data-testid": "answer-default" }, ["default"]));
    if (option.description) text.append(el("span", { class: "desc" }, renderInlineMarkdown(option.description)));
    set.append(el("label", { class: "option", "data-testid": "answer-option", "data-option-id": option.option_id }, [input, text]));
  }
  const other = el("textarea", {
    name: `${name}-text`, rows: "2", maxlength: "2000", "data-testid": "answer-text",
    "aria-label": `Your own answer to ${question.title || question.prompt}`,
  });
  set.append(el("label", { class: "other" }, ["Or answer in your own words", other]));
  return set;
}

/** @param {HTMLFormElement} form @param {Question[]} questions @returns {Answer[]} */
function collect(form, questions) {
  return questions.map((question, index) => {
    const chosen = /** @type {HTMLInputElement | null} */ (form.querySelector(`input[name="q${index}"]:checked`));
    const text = /** @type {HTMLTextAreaElement} */ (form.querySelector(`textarea[name="q${index}-text"]`));
    return {
      question_id: question.id,
      selected_options: chosen ? [chosen.value] : [],
      custom_text: text.value.trim(),
    };
  });
}

/** @param {Linked} bundle */
function showForm(bundle) {
  const form = /** @type {HTMLFormElement} */ (el("form", { "data-testid": "answer-form", novalidate: "" }));
  bundle.questions.forEach((q, i) => form.append(questionFieldset(q, i)));
  const message = el("p", { class: "hint", "data-testid": "answer-message", role: "status", "aria-live": "polite" });
  const send = el("button", { type: "submit", class: "primary", "data-testid": "answer-submit" }, ["Send answer"]);
  const skip = el("button", { type: "button", "data-testid": "answer-skip" }, ["Skip"]);
  const confirmSkip = el("button", { type: "button", "data-testid": "answer-skip-confirm", hidden: "" }, ["Skip these questions"]);
  const keep = el("button", { type: "button", "data-testid": "answer-skip-cancel", hidden: "" }, ["Keep answering"]);
  const actions = el("div", { class: "actions" }, [send, skip, confirmSkip, keep]);
  form.append(el("section", { class: "card" }, [message, actions]));

  /** @param {boolean} asking */
  const skipping = (asking) => {
    send.hidden = skip.hidden = asking;
    confirmSkip.hidden = keep.hidden = !asking;
    message.className = "hint";
    message.textContent = asking ? "Skip? The agent continues without your answer." : "";
  };
  // A hint about missing answers goes as soon as the person changes something.
  form.addEventListener("input", () => {
    if (message.className === "error") message.textContent = "";
  });
  skip.addEventListener("click", () => skipping(true));
  keep.addEventListener("click", () => skipping(false));
  confirmSkip.addEventListener("click", () => {
    void submit(bundle, { answers: [], rejected: true, reject_reason: SKIP_REASON }, form, message);
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const answers = collect(form, bundle.questions);
    const missing = bundle.questions.filter(
      (_, i) => !answers[i].selected_options.length && !answers[i].custom_text,
    );
    if (missing.length) {
      message.className = "error";
      message.textContent = `Answer ${missing.map((q) => q.title || q.prompt).join(" and ")} to send.`;
      return;
    }
    void submit(bundle, { answers, rejected: false, reject_reason: "" }, form, message);
  });
  const deadline = deadlineCard(bundle);
  show(page, "open", [...contextCards(bundle), ...(deadline ? [deadline] : []), form]);
}

/**
 * @param {Linked} bundle @param {Reply} body @param {HTMLFormElement} form
 * @param {HTMLElement} message
 */
async function submit(bundle, body, form, message) {
  const buttons = [...form.querySelectorAll("button")];
  buttons.forEach((b) => { b.disabled = true; });
  message.className = "hint";
  message.textContent = "Sending…";
  /** @type {Reply | null} */
  let reply = null;
  try {
    reply = await post(bundle, body, message);
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
  if (reply) showDone(bundle, reply);
}

/**
 * The answer as recorded, or null when the page says why not (and keeps the form).
 * @param {Linked} bundle @param {Reply} body @param {HTMLElement} message
 * @returns {Promise<Reply | null>}
 */
async function post(bundle, body, message) {
  let res;
  try {
    res = await fetch(`${api}/respond`, {
      method: "POST",
      credentials: "omit",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    message.className = "error";
    message.textContent = "Cannot reach Clarion. Check your connection and send again.";
    return null;
  }
  const data = await res.json().catch(() => ({}));
  if (res.ok) {
    own.mark(bundle.pending_id);
    return data.response ?? body;
  }
  const error = data.error ?? {};
  if (res.status === 409) {
    // The bundle read again says who answered (a person or the expiry policy).
    const fresh = await fetch(api, { credentials: "omit", cache: "no-store" })
      .then((r) => (r.ok ? r.json() : null)).catch(() => null);
    showTaken(fresh ? { ...bundle, ...fresh } : bundle, error.response ?? fresh?.response ?? null);
    return null;
  }
  if (res.status === 404) {
    showInvalid();
    return null;
  }
  message.className = "error";
  if (res.status >= 500 && error.retryable) {
    message.textContent = `Not delivered (${error.message || res.status}). Your answer is kept: send again.`;
  } else if (res.status >= 500) {
    // Accepted: if it won, this browser answered it.
    own.mark(bundle.pending_id);
    message.textContent = "Your answer was accepted, but Clarion could not confirm it reached the agent. Do not send it again.";
  } else {
    message.textContent = error.message || `Clarion refused the answer (${res.status}).`;
  }
  return null;
}

function showInvalid() {
  show(page, "invalid", [
    outcome(
      "This answer link is not valid",
      "It may have expired, been copied incompletely, or never have been issued by this Clarion server. Open the question from Clarion's inbox, or ask for a new link.",
      "answer-invalid",
      "taken",
    ),
  ]);
}

void loadLinked({
  page,
  api,
  name: "answer",
  noun: "question",
  invalid: showInvalid,
  opened: (/** @type {Linked} */ bundle) => {
    if (ACTIVE.has(bundle.state)) showForm(bundle);
    else showTaken(bundle, bundle.response);
  },
});
