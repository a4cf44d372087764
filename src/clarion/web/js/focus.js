// Keyboard focus helpers for the dialogs (question overlay, permission panel, confirmations):
// Tab and Shift+Tab wrap inside the dialog, and focus goes back where it came from when the
// dialog closes. Imported by overlay.js, permission-panel.js and confirm.js.

/** A touch screen (`pointer: coarse`): Enter is a new line, and nothing focuses a text box
 * by itself (that would open the on-screen keyboard). */
export const touchScreen = () => typeof matchMedia === "function" && matchMedia("(pointer: coarse)").matches;

const FOCUSABLE = "button, [href], input, select, textarea, [tabindex]:not([tabindex='-1'])";

/**
 * The elements Tab can reach inside `root`, in document order (disabled and hidden ones left out).
 * @param {HTMLElement} root
 * @returns {HTMLElement[]}
 */
export function focusables(root) {
  return /** @type {HTMLElement[]} */ ([...root.querySelectorAll(FOCUSABLE)]).filter((el) =>
    !(/** @type {HTMLButtonElement} */ (el).disabled) && el.getClientRects().length > 0);
}

/**
 * Keeps Tab inside `root`: from the last control it wraps to the first, Shift+Tab from the first
 * (or from the dialog itself) to the last. Returns true when it moved the focus.
 * @param {HTMLElement} root
 * @param {KeyboardEvent} e
 */
export function trapTab(root, e) {
  if (e.key !== "Tab") return false;
  const items = focusables(root);
  if (!items.length) {
    e.preventDefault();
    root.focus();
    return true;
  }
  const first = items[0];
  const last = items[items.length - 1];
  const active = document.activeElement;
  const outside = !active || !root.contains(active);
  if (e.shiftKey && (active === first || active === root || outside)) {
    e.preventDefault();
    last.focus();
    return true;
  }
  if (!e.shiftKey && (active === last || outside)) {
    e.preventDefault();
    first.focus();
    return true;
  }
  return false;
}

/**
 * Whether an element can take focus back: still in the page and shown.
 * @param {Element | null | undefined} el
 * @returns {el is HTMLElement}
 */
export function canRefocus(el) {
  return !!el && el instanceof HTMLElement && el.isConnected && el !== document.body &&
    el.getClientRects().length > 0;
}
