// The inbox page (`#/inbox`): every question and permission request waiting for the person,
// across tasks, as a compact list (two lines per item: kind, task, age, state; then what is asked, in full),
// deadlines first then newest first. A line expands in place to what the person needs to
// answer: the task's description, what the agent last said, the question form (with the
// agent's explanation) or the permission panel, and a link to the session. Imported by
// main.js; InboxController supplies the items.

import { h } from "./dom.js";
import { deadlineWords, escalationWords, inboxOrder, itemStateWords, itemSummary } from "./inbox.js";
import { renderInlineMarkdown, renderMarkdown } from "./markdown.js";
import { isTechnicalFailure } from "./transcript.js";
import { formatRoute } from "./router.js";
import { ClarificationOverlay } from "./overlay.js";
import { PermissionPanel } from "./permission-panel.js";
import { age, fullStamp } from "./time-words.js";

/** @typedef {import("./inbox.js").InboxItem} InboxItem */
/** @typedef {import("./inbox-controller.js").InboxController} InboxController */
/** @typedef {import("./api.js").Api} Api */

/**
 * @typedef {{el: HTMLElement, row: HTMLButtonElement, body: HTMLElement, details: HTMLElement,
 *   widget: ClarificationOverlay | PermissionPanel, rowKey?: string, itemKey?: string}} Card
 * rowKey, itemKey: what the line and the body were last drawn from.
 */

export class InboxView {
  /** @param {{api: Api, inbox: InboxController, onBack: () => void}} deps */
  constructor(deps) {
    this.deps = deps;
    /** @type {Map<string, Card>} */
    this.cards = new Map();
    /** @type {Set<string>} items opened by the person */
    this.expanded = new Set();
    this.list = h("ol", { class: "inbox-list", testid: "inbox-list" });
    this.status = h("p", { class: "status-line", testid: "inbox-status", role: "status" });
    this.notice = h("p", { class: "notice", testid: "inbox-notice", role: "status", hidden: true });
    this.notifyButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", testid: "inbox-notify",
      onClick: () => void this.toggleNotifications() }));
    this.root = h("div", { class: "task-view inbox-view", testid: "inbox-view" },
      h("div", { class: "sheet-header" },
        h("button", { type: "button", class: "back", testid: "inbox-back", onClick: deps.onBack,
          "aria-label": "Back to board" }, "← Board"),
        h("h2", { text: "Inbox" }), h("span", { class: "spacer" }), this.notifyButton),
      this.notice, this.status, this.list);
  }

  async toggleNotifications() {
    const inbox = this.deps.inbox;
    if (inbox.notifying) inbox.disableNotifications();
    else if (!(await inbox.enableNotifications())) {
      this.setNotice("The browser did not allow notifications for this page.");
    }
    this.render();
  }

  /** @param {string} text */
  setNotice(text) {
    this.notice.textContent = text;
    this.notice.hidden = !text;
  }

  /** After a reconnect: error lines from the outage no longer hold. */
  clearErrors() {
    for (const card of this.cards.values()) {
      if (card.widget instanceof ClarificationOverlay) card.widget.clearError();
    }
  }

  render() {
    const { inbox } = this.deps;
    this.notifyButton.textContent = inbox.notifying ? "Notifications on" : "Notify me of new items";
    this.notifyButton.setAttribute("aria-pressed", inbox.notifying ? "true" : "false");
    const items = inboxOrder(inbox.items);
    this.status.textContent = inbox.error ? `Could not read the inbox: ${inbox.error}`
      : !inbox.loaded ? "Loading…" : items.length ? "" : "Nothing is waiting for you.";
    const ids = new Set(items.map((i) => i.id));
    for (const [id, card] of this.cards) {
      if (!ids.has(id) && !card.widget.submitting) this.cards.delete(id);
    }
    // Cards are kept by id, so a half-typed answer survives a live refresh; and the lines
    // already shown stay in the page (see keepInPlace), so a press survives it too.
    keepInPlace(this.list, items.map((item) => this.card(item, items.length === 1).el));
    // Which read the list shows: a refresh that changed nothing on screen is still visible.
    this.list.dataset.reads = String(inbox.reads);
  }

  /**
   * @param {string} id
   * @param {boolean} open
   */
  setExpanded(id, open) {
    if (open) this.expanded.add(id);
    else this.expanded.delete(id);
    this.render();
  }

  /**
   * @param {InboxItem} item
   * @param {boolean} only the item is the only one: it opens by itself
   */
  card(item, only) {
    let card = this.cards.get(item.id);
    if (!card) card = this.newCard(item);
    // The only item opens by itself, and stays open when others arrive: the person may be
    // reading it, or pressing one of its buttons.
    if (only) this.expanded.add(item.id);
    const open = this.expanded.has(item.id);
    // A refresh redraws only what changed: a button drawn anew between the press and the
    // release takes no click, and the decision or answer would silently not be sent.
    const itemKey = JSON.stringify(item);
    const rowKey = JSON.stringify([open, age(item.created_at), deadlineWords(item, Date.now())]) + itemKey;
    if (card.rowKey !== rowKey) this.drawRow(card, item, open);
    card.rowKey = rowKey;
    card.body.hidden = !open;
    if (card.itemKey !== itemKey) this.drawBody(card, item);
    card.itemKey = itemKey;
    return card;
  }

  /**
   * @param {Card} card
   * @param {InboxItem} item
   * @param {boolean} open
   */
  drawRow(card, item, open) {
    card.row.setAttribute("aria-expanded", open ? "true" : "false");
    card.row.replaceChildren(
      h("span", { class: `badge inbox-kind kind-${item.kind}`, text: item.kind === "permission" ? "Permission" : "Question" }),
      h("strong", { class: "inbox-task", testid: "inbox-task", text: item.task.title }),
      h("span", { class: "inbox-summary", testid: "inbox-summary" }, ...renderInlineMarkdown(itemSummary(item), { links: false })),
      h("time", { class: "inbox-age", testid: "inbox-age", datetime: item.created_at, title: fullStamp(item.created_at),
        text: age(item.created_at) }),
      ...waitingMarks(item),
      h("span", { class: `inbox-state state-${item.state}`, testid: "inbox-state", text: itemStateWords(item) }));
  }

  /**
   * @param {Card} card
   * @param {InboxItem} item
   */
  drawBody(card, item) {
    card.details.replaceChildren(...this.details(item));
    if (card.widget instanceof PermissionPanel) {
      card.widget.show({ id: item.id, session_id: item.session_id, content: String(item.tool_call?.title ?? ""),
        metadata: { status: "pending", tool_call: item.tool_call ?? {}, options: item.options ?? [] } });
    } else {
      card.widget.show({ pending_id: item.id, state: item.state, questions: item.questions ?? [],
        context: item.context ?? null, session_id: item.session_id, task_id: item.task.id });
    }
  }

  /** @param {InboxItem} item */
  newCard(item) {
    const closed = (/** @type {string} */ text) => {
      this.setNotice(`${item.task.title}: ${text}`);
      this.cards.delete(item.id);
      this.expanded.delete(item.id);
      void this.deps.inbox.refresh();
    };
    const widget = item.kind === "permission"
      ? new PermissionPanel({ api: this.deps.api, focusOnShow: false, onClosed: (_id, text) => closed(text) })
      : new ClarificationOverlay({ api: this.deps.api, modal: false,
        onClosed: (_id, outcome) => closed(`${outcome.text}${outcome.winner ? ` ${outcome.winner}` : ""}`) });
    const bodyId = `inbox-body-${item.id}`;
    const row = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "inbox-row", testid: "inbox-row",
      "aria-controls": bodyId, onClick: () => this.setExpanded(item.id, row.getAttribute("aria-expanded") !== "true") }));
    const details = h("div", { class: "inbox-details" });
    const link = formatRoute({ name: "session", taskId: item.task.id, sessionId: item.session_id });
    const body = h("div", { class: "inbox-body", id: bodyId, testid: "inbox-body" }, details, widget.root,
      h("a", { href: link, class: "inbox-open", testid: "inbox-open" }, "Open the session"));
    const el = h("li", { class: "inbox-item", testid: `inbox-item-${item.id}`, dataset: { kind: item.kind } }, row, body);
    const card = { el, row, body, details, widget };
    this.cards.set(item.id, card);
    return card;
  }

  /**
   * What a person needs around the form: the task's description and what the agent last said.
   * (The agent's explanation of its questions is part of the question form.)
   * @param {InboxItem} item
   */
  details(item) {
    return [
      item.task_description ? h("div", { class: "inbox-context-block" },
        h("span", { class: "inbox-label", text: "Task" }),
        h("div", { class: "markdown inbox-task-description", testid: "inbox-task-description" },
          ...renderMarkdown(item.task_description))) : null,
      // A failed ask's raw error says nothing the question itself does not.
      item.last_agent_message && !isTechnicalFailure(item.last_agent_message) ? h("div", { class: "inbox-context-block" },
        h("span", { class: "inbox-label", text: "The agent last said" }),
        h("div", { class: "markdown inbox-last-message", testid: "inbox-last-message" },
          ...renderMarkdown(item.last_agent_message))) : null,
    ].filter((part) => part !== null);
  }
}

/**
 * Makes `list`'s children exactly `wanted`, in order, without taking out and putting back the
 * ones already in place: a line removed from the page even for a moment loses the press on
 * its buttons (the browser then sends the click to no button at all).
 * @param {HTMLElement} list
 * @param {HTMLElement[]} wanted
 */
function keepInPlace(list, wanted) {
  const keep = new Set(wanted);
  for (const child of [...list.children]) if (!keep.has(/** @type {HTMLElement} */ (child))) child.remove();
  wanted.forEach((el, i) => {
    const there = list.children[i];
    if (there !== el) list.insertBefore(el, there ?? null);
  });
}

/**
 * A question's waiting policy on its line: the deadline ("expires in 3 h, then Skip") and a
 * mark when it was escalated; nothing for a question without one.
 * @param {InboxItem} item
 */
function waitingMarks(item) {
  const deadline = deadlineWords(item, Date.now());
  const escalated = escalationWords(item);
  return [
    deadline ? h("time", { class: "inbox-deadline", testid: "inbox-deadline", datetime: String(item.expires_at),
      title: fullStamp(String(item.expires_at)), text: deadline }) : null,
    escalated ? h("span", { class: "badge inbox-escalated", testid: "inbox-escalated", text: escalated }) : null,
  ].filter((mark) => mark !== null);
}
