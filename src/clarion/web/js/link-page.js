// What the two pages opened from a signed link share: the answer page (/a/<token>) and the
// decision page (/p/<token>). Each reads and acts with the link's token as its only
// credential, builds its elements from text (never HTML), and keeps one mark per item in
// localStorage: that this browser's own submission through the link was recorded, so
// reopening the link says "You" rather than "Someone".

/**
 * The page's root element and its link: `prefix` is the path's first part ("a" or "p").
 * @param {string} rootId @param {string} prefix
 * @returns {{page: HTMLElement, api: string}}
 */
export function linkPage(rootId, prefix) {
  const page = /** @type {HTMLElement} */ (document.getElementById(rootId));
  const path = location.pathname.replace(new RegExp(`^/${prefix}/`), "").replace(/\/+$/, "");
  return { page, api: `/api/v1/${prefix}/${encodeURIComponent(decodeURIComponent(path))}` };
}

/**
 * This browser's own-submission marks under `prefix` (e.g. "clarion.link-answered.").
 * @param {string} prefix
 */
export function ownMarks(prefix) {
  return {
    /** @param {string} id */
    here(id) {
      try {
        return localStorage.getItem(prefix + id) === "1";
      } catch {
        return false;
      }
    },
    /** @param {string} id */
    mark(id) {
      try {
        localStorage.setItem(prefix + id, "1");
      } catch {
        // Private browsing may refuse storage: the page then says "Someone" on a later visit.
      }
    },
  };
}

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

/** @param {HTMLElement} page @param {string} state @param {Node[]} children */
export function show(page, state, children) {
  page.dataset.state = state;
  page.removeAttribute("aria-busy");
  page.replaceChildren(...children);
}

/** @param {string} title @param {string} text @param {string} testid @param {string} kind */
export function outcome(title, text, testid, kind) {
  return el("section", { class: `card outcome ${kind}`, "data-testid": testid, role: "status" }, [
    el("h2", {}, [title]),
    el("p", { class: "prose" }, [text]),
  ]);
}

/** The outcome where the person's eyes are (the form they tapped was long); focus moves to
 * it without opening a keyboard. @param {HTMLElement} card */
export function reveal(card) {
  card.tabIndex = -1;
  card.focus({ preventScroll: true });
  card.scrollIntoView({ block: "nearest" });
}

/**
 * Read what the link names and hand it to `opened`. A server out of reach (with a button to try
 * again), a link it does not know (`invalid`) and any other refusal each get their own card.
 * @param {{page: HTMLElement, api: string, name: string, noun: string, invalid: () => void,
 *   opened: (linked: any) => void}} link
 *   `name` prefixes the cards' test ids ("answer"), `noun` says what failed to load ("question").
 */
export async function loadLinked(link) {
  const { page, api, name, noun, invalid, opened } = link;
  let res;
  try {
    res = await fetch(api, { credentials: "omit", cache: "no-store" });
  } catch {
    const retry = el("button", { type: "button", class: "primary" }, ["Try again"]);
    retry.addEventListener("click", () => void loadLinked(link));
    show(page, "offline", [
      outcome("Cannot reach Clarion", "Check your connection, then try again.", `${name}-offline`, "taken"),
      el("div", { class: "actions" }, [retry]),
    ]);
    return;
  }
  if (res.status === 404) {
    invalid();
    return;
  }
  if (!res.ok) {
    const says = `The server answered ${res.status}. Try again in a moment.`;
    show(page, "error", [outcome(`Clarion could not load this ${noun}`, says, `${name}-error`, "taken")]);
    return;
  }
  opened(await res.json());
}
