// Keyboard shortcuts outside the question box: `?` help, `/` search, `j`/`k` next and previous
// item, `g i` the inbox, `g b` the board. `shortcutFor` is pure (a pending `g` is the state);
// main.js listens and acts. Keys typed into a text field, or with Ctrl/Alt/Meta, are not
// shortcuts; the question box's own keys (1-6, Enter) win while it has focus.

/** The help list, in the order shown. */
export const SHORTCUTS = [
  ["?", "Show or hide this help"],
  ["/", "Search tasks"],
  ["j / k", "Next / previous task (or inbox item)"],
  ["Enter", "Open it"],
  ["g i", "Go to the inbox"],
  ["g b", "Go to the board"],
  ["Esc", "Close this help, or hide a question for now"],
];

/**
 * @typedef {"help" | "search" | "next" | "previous" | "inbox" | "board" | null} Shortcut
 */

/**
 * @param {{key: string, ctrlKey?: boolean, altKey?: boolean, metaKey?: boolean, inText?: boolean}} key
 * @param {boolean} afterG whether the previous key was a lone `g`
 * @returns {{shortcut: Shortcut, afterG: boolean}}
 */
export function shortcutFor(key, afterG) {
  if (key.ctrlKey || key.altKey || key.metaKey || key.inText) return { shortcut: null, afterG: false };
  if (afterG) {
    if (key.key === "i") return { shortcut: "inbox", afterG: false };
    if (key.key === "b") return { shortcut: "board", afterG: false };
  }
  switch (key.key) {
    case "?": return { shortcut: "help", afterG: false };
    case "/": return { shortcut: "search", afterG: false };
    case "j": return { shortcut: "next", afterG: false };
    case "k": return { shortcut: "previous", afterG: false };
    case "g": return { shortcut: null, afterG: true };
    default: return { shortcut: null, afterG: false };
  }
}

/**
 * The index to move to among `count` items from `current` (-1: none focused yet).
 * @param {number} current
 * @param {number} count
 * @param {1 | -1} step
 */
export function moveIndex(current, count, step) {
  if (count === 0) return -1;
  if (current < 0) return step > 0 ? 0 : count - 1;
  return Math.max(0, Math.min(count - 1, current + step));
}
