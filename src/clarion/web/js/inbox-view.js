// The inbox page (`#/inbox`): every question and permission request waiting for the person,
// across tasks, oldest first, each answerable in place (the same question form and permission
// panel as the session view) with a link to its session; and the opt-in for browser
// notifications. Imported by main.js; InboxController supplies the items.

import { h, shortTime } from "./dom.js";
import { formatRoute } from "./router.js";
import { ClarificationOverlay } from "./overlay.js";
import { PermissionPanel } from "./permission-panel.js";

/** @typedef {import("./inbox.js").InboxItem} InboxItem */
/** @typedef {import("./inbox-controller.js").InboxController} InboxController */
/** @typedef {import("./api.js").Api} Api */

export class InboxView {
  /** @param {{api: Api, inbox: InboxController, onBack: () => void}} deps */
  constructor(deps) {
    this.deps = deps;
    /** @type {Map<string, {el: HTMLElement, widget: ClarificationOverlay | PermissionPanel}>} */
    this.cards = new Map();
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

  render() {
    const { inbox } = this.deps;
    this.notifyButton.textContent = inbox.notifying ? "Notifications on" : "Notify me of new items";
    this.notifyButton.setAttribute("aria-pressed", inbox.notifying ? "true" : "false");
    const items = inbox.items;
    this.status.textContent = inbox.error ? `Could not read the inbox: ${inbox.error}`
      : !inbox.loaded ? "Loading…" : items.length ? "" : "Nothing is waiting for you.";
    const ids = new Set(items.map((i) => i.id));
    for (const [id, card] of this.cards) {
      if (!ids.has(id) && !card.widget.submitting) this.cards.delete(id);
    }
    // Cards are kept by id, so a half-typed answer survives a live refresh.
    this.list.replaceChildren(...items.map((item) => this.card(item).el));
  }

  /** @param {InboxItem} item */
  card(item) {
    let card = this.cards.get(item.id);
    if (!card) {
      const closed = (/** @type {string} */ text) => {
        this.setNotice(`${item.task.title}: ${text}`);
        this.cards.delete(item.id);
        void this.deps.inbox.refresh();
      };
      const widget = item.kind === "permission"
        ? new PermissionPanel({ api: this.deps.api, focusOnShow: false, onClosed: (_id, text) => closed(text) })
        : new ClarificationOverlay({ api: this.deps.api, modal: false,
          onClosed: (_id, outcome) => closed(`${outcome.text}${outcome.winner ? ` ${outcome.winner}` : ""}`) });
      const link = formatRoute({ name: "session", taskId: item.task.id, sessionId: item.session_id });
      const el = h("li", { class: "inbox-item", testid: `inbox-item-${item.id}`, dataset: { kind: item.kind } },
        h("div", { class: "inbox-item-head" },
          h("strong", { class: "inbox-task", testid: "inbox-task", text: item.task.title }),
          h("span", { class: "badge", text: item.kind === "permission" ? "permission" : "question" }),
          h("time", { datetime: item.created_at, text: shortTime(item.created_at) }),
          h("a", { href: link, class: "inbox-open", testid: "inbox-open" }, "Open session")),
        widget.root);
      card = { el, widget };
      this.cards.set(item.id, card);
    }
    if (card.widget instanceof PermissionPanel) {
      card.widget.show({ id: item.id, session_id: item.session_id, content: String(item.tool_call?.title ?? ""),
        metadata: { status: "pending", tool_call: item.tool_call ?? {}, options: item.options ?? [] } });
    } else {
      card.widget.show({ pending_id: item.id, state: item.state, questions: item.questions ?? [],
        context: item.context ?? null, session_id: item.session_id, task_id: item.task.id });
    }
    return card;
  }
}
