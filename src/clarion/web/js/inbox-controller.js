// Keeps the inbox current for the whole page: reads GET /inbox at start, after events that can
// change it (debounced) and after a reconnect; puts the count in the tab title and the top bar;
// and, when the person opted in, shows a browser notification for an item that arrives while
// the tab is hidden. Imported by main.js; the inbox view renders `items`.

import { newItems, notificationText, titleWithCount } from "./inbox.js";

/** @typedef {import("./inbox.js").InboxItem} InboxItem */
/** @typedef {import("./api.js").Api} Api */

const OPT_IN_KEY = "clarion.notify";
const REFRESH_MS = 250;

/** Events after which the inbox may differ: state and turn changes, question and permission
 * rows, and any message event that carries a pending projection (content-only updates, such as
 * streamed text, carry none and cause no read).
 * @param {string} action
 * @param {any} payload
 */
export function inboxMayChange(action, payload) {
  if (action === "session.state_changed" || action.startsWith("session.turn.")) return true;
  if (action === "clarification.waiting.updated") return true; // a deadline, an escalation
  if (!action.startsWith("session.message.") || !payload) return false;
  return payload.type === "clarification_request" || payload.type === "permission_request" ||
    Object.prototype.hasOwnProperty.call(payload, "pending_action");
}

export class InboxController {
  /** @param {{api: Api, onChange: () => void, countEl: HTMLElement}} deps */
  constructor(deps) {
    this.deps = deps;
    /** @type {InboxItem[]} */
    this.items = [];
    this.loaded = false;
    this.error = "";
    /** @type {Set<string>} ids seen in an earlier read (not announced again) */
    this.known = new Set();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.reading = 0;
    /** Reads that came back and were taken in (the view shows the count on its list). */
    this.reads = 0;
  }

  /** Whether the person asked to be notified and the browser allows it. */
  get notifying() {
    return localStorage.getItem(OPT_IN_KEY) === "on" && typeof Notification !== "undefined" &&
      Notification.permission === "granted";
  }

  /** The opt-in: asks the browser's permission, remembers the choice. */
  async enableNotifications() {
    if (typeof Notification === "undefined") return false;
    const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
    if (answer === "granted") localStorage.setItem(OPT_IN_KEY, "on");
    this.deps.onChange();
    return answer === "granted";
  }

  disableNotifications() {
    localStorage.removeItem(OPT_IN_KEY);
    this.deps.onChange();
  }

  /** A read soon; several events in a burst make one read. */
  schedule() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.refresh();
    }, REFRESH_MS);
  }

  async refresh() {
    const reading = ++this.reading;
    try {
      const body = await this.deps.api.inbox();
      if (reading !== this.reading) return;
      const items = /** @type {InboxItem[]} */ (body.items ?? []);
      const fresh = this.loaded ? newItems(this.known, items) : [];
      this.items = items;
      this.known = new Set(items.map((i) => i.id));
      this.loaded = true;
      this.reads += 1;
      this.error = "";
      if (fresh.length && document.hidden && this.notifying) for (const item of fresh) this.notify(item);
    } catch (err) {
      if (reading !== this.reading) return;
      this.error = String(/** @type {any} */ (err)?.message ?? err);
    }
    this.show();
    this.deps.onChange();
  }

  /** @param {InboxItem} item */
  notify(item) {
    const { title, body } = notificationText(item);
    const note = new Notification(title, { body, tag: `clarion-${item.id}` });
    note.onclick = () => {
      window.focus();
      location.hash = "#/inbox";
    };
  }

  show() {
    const count = this.items.length;
    document.title = titleWithCount(count);
    this.deps.countEl.textContent = String(count);
    this.deps.countEl.hidden = count === 0;
  }
}
