// The answer page (/a/<token>): one question bundle, read and answered with the link's token
// as the only credential. Self-contained: it loads no other module of the web UI and keeps no
// state beyond this page. Every text from the server goes in as text, never as HTML.

/** @typedef {{option_id: string, label: string, description?: string}} Option */
/** @typedef {{id: string, title?: string, prompt: string, options: Option[]}} Question */
/** @typedef {{question_id: string, selected_options: string[], custom_text: string}} Answer */
/** @typedef {{answers: Answer[], rejected: boolean, reject_reason: string}} Reply */
/**
 * @typedef {{pending_id: string, state: string, questions: Question[], context: string,
 *   task: {id: string, title: string, description: string}, response: Reply | null}} Linked
 */

const ACTIVE = new Set(["active_live", "active_detached"]);
const SKIP_REASON = "Skipped from an answer link";

const page = /** @type {HTMLElement} */ (document.getElementById("answer-page"));
const token = decodeURIComponent(location.pathname.replace(/^\/a\//, "").replace(/\/+$/, ""));
const api = `/api/v1/a/${encodeURIComponent(token)}`;

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

/** @param {string} state @param {Node[]} children */
function show(state, children) {
  page.dataset.state = state;
  page.removeAttribute("aria-busy");
  page.replaceChildren(...children);
}

/** @param {string} title @param {string} text @param {string} testid @param {string} kind */
function outcome(title, text, testid, kind) {
  return el("section", { class: `card outcome ${kind}`, "data-testid": testid, role: "status" }, [
    el("h2", {}, [title]),
    el("p", { class: "prose" }, [text]),
  ]);
}

/** The outcome where the person's eyes are (the form they tapped was long); focus moves to
 * it without opening a keyboard. @param {HTMLElement} card */
function reveal(card) {
  card.tabIndex = -1;
  card.focus({ preventScroll: true });
  card.scrollIntoView({ block: "nearest" });
}

/** @param {Linked} bundle */
function contextCards(bundle) {
  const cards = [];
  const task = el("section", { class: "card", "data-testid": "answer-task" }, [
    el("p", { class: "label" }, ["Task"]),
    el("h1", { "data-testid": "answer-task-title" }, [bundle.task.title || "Untitled task"]),
  ]);
  if (bundle.task.description) {
    task.append(el("p", { class: "prose", "data-testid": "answer-task-description" }, [
      bundle.task.description,
    ]));
  }
  cards.push(task);
  if (bundle.context) {
    cards.push(el("section", { class: "card", "data-testid": "answer-context" }, [
      el("p", { class: "label" }, ["The agent says"]),
      el("p", { class: "prose" }, [bundle.context]),
    ]));
  }
  return cards;
}

/** @param {Question[]} questions @param {Reply} response */
function winnerList(questions, response) {
  if (response.rejected) {
    return el("p", { "data-testid": "answer-winner" }, [
      `Skipped${response.reject_reason ? `: ${response.reject_reason}` : "."}`,
    ]);
  }
  const list = el("ul", { class: "winner", "data-testid": "answer-winner" });
  for (const answer of response.answers) {
    const question = questions.find((q) => q.id === answer.question_id);
    const labels = answer.selected_options.map(
      (id) => question?.options.find((o) => o.option_id === id)?.label ?? id,
    );
    if (answer.custom_text) labels.push(`“${answer.custom_text}”`);
    const name = question?.title || question?.prompt || answer.question_id;
    list.append(el("li", {}, [`${name}: ${labels.join(", ") || "no answer"}`]));
  }
  return list;
}

/** @param {Linked} bundle @param {Reply | null} winner */
function showTaken(bundle, winner) {
  const card = outcome(
    "Already answered",
    winner
      ? "Someone answered this question before you. This is the answer the agent got:"
      : "This question is no longer waiting for an answer.",
    "answer-already",
    "taken",
  );
  if (winner) card.append(winnerList(bundle.questions, winner));
  show("taken", [...contextCards(bundle), card]);
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
  show("answered", [...contextCards(bundle), card]);
  reveal(card);
}

/** @param {Question} question @param {number} index */
function questionFieldset(question, index) {
  const name = `q${index}`;
  const set = el("fieldset", { class: "card", "data-testid": "answer-question", "data-question-id": question.id });
  const legend = el("legend", {}, [question.title || `Question ${index + 1}`]);
  set.append(legend);
  if (question.prompt && question.prompt !== question.title) {
    set.append(el("p", { class: "prose", "data-testid": "answer-prompt" }, [question.prompt]));
  }
  for (const option of question.options) {
    const input = el("input", { type: "radio", name, value: option.option_id });
    const text = el("span", {}, [option.label]);
    if (option.description) text.append(el("span", { class: "desc" }, [option.description]));
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
  show("open", [...contextCards(bundle), form]);
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
  if (res.ok) return data.response ?? body;
  const error = data.error ?? {};
  if (res.status === 409) {
    showTaken(bundle, error.response ?? null);
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
    message.textContent = "Your answer was accepted, but Clarion could not confirm it reached the agent. Do not send it again.";
  } else {
    message.textContent = error.message || `Clarion refused the answer (${res.status}).`;
  }
  return null;
}

function showInvalid() {
  show("invalid", [
    outcome(
      "This answer link is not valid",
      "It may have expired, been copied incompletely, or never have been issued by this Clarion server. Open the question from Clarion's inbox, or ask for a new link.",
      "answer-invalid",
      "taken",
    ),
  ]);
}

async function load() {
  let res;
  try {
    res = await fetch(api, { credentials: "omit", cache: "no-store" });
  } catch {
    const retry = el("button", { type: "button", class: "primary" }, ["Try again"]);
    retry.addEventListener("click", () => void load());
    show("offline", [
      outcome("Cannot reach Clarion", "Check your connection, then try again.", "answer-offline", "taken"),
      el("div", { class: "actions" }, [retry]),
    ]);
    return;
  }
  if (res.status === 404) {
    showInvalid();
    return;
  }
  if (!res.ok) {
    show("error", [outcome("Clarion could not load this question", `The server answered ${res.status}. Try again in a moment.`, "answer-error", "taken")]);
    return;
  }
  /** @type {Linked} */
  const bundle = await res.json();
  if (ACTIVE.has(bundle.state)) showForm(bundle);
  else showTaken(bundle, bundle.response);
}

void load();
