// Errors in words a person reads: a failed fetch (no connection) says so instead of the
// browser's "TypeError: Failed to fetch"; a server error gives its message; the live feed's
// state shows as the top bar's word and, while down, a banner. Imported by main.js and the views.

/** What the page says when the server cannot be reached. */
export const UNREACHABLE = "Cannot reach the Clarion server (offline or restarting); it retries by itself.";

/**
 * @param {unknown} err an ApiError (status 0 for a network failure) or anything thrown
 * @returns {string}
 */
export function humanError(err) {
  const e = /** @type {any} */ (err);
  if (!e) return "Something went wrong.";
  if (e.status === 0 || e.code === "network" || e instanceof TypeError) return UNREACHABLE;
  const message = typeof e.message === "string" && e.message ? e.message : String(e);
  return message.replace(/^(Type|Api)Error:\s*/, "");
}

/**
 * Shows the live feed's state: "Live" / "Connecting…" / "Offline" in the top bar, the offline
 * banner while it is down, and clears the error line once it is live again (errors from while
 * it was down no longer hold; the reload after a reconnect sets it again if one still does).
 * @param {"connecting" | "open" | "closed"} status
 * @param {{statusEl: HTMLElement, banner: HTMLElement, errorLine: ErrorLine}} els
 */
export function showConnection(status, els) {
  els.statusEl.dataset.status = status;
  els.statusEl.textContent = status === "open" ? "Live" : status === "connecting" ? "Connecting…" : "Offline";
  if (status === "open") {
    els.banner.hidden = true;
    els.errorLine.clearAll();
  } else if (status === "closed") {
    els.banner.hidden = false;
    const text = els.banner.querySelector("[data-testid=connection-banner-text]");
    if (text) text.textContent = "Offline: the connection to the Clarion server was lost. Reconnecting…";
  }
}

/**
 * A line of errors above a view. Each kind of action (a load, a move, a create) clears only
 * the error it showed itself: a board read that started before a create failed, and succeeds
 * after it, must not wipe the create's error before the person has read it.
 */
export class ErrorLine {
  /** @param {HTMLElement} el */
  constructor(el) {
    this.el = el;
    this.kind = "";
  }

  /** @param {string} kind @param {string} text */
  show(kind, text) {
    this.kind = kind;
    this.el.textContent = text;
  }

  /** Clears the line if it shows an error of `kind`. @param {string} kind */
  clear(kind) {
    if (this.kind === kind) this.clearAll();
  }

  clearAll() {
    this.kind = "";
    this.el.textContent = "";
  }
}
