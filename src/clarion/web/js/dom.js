// A tiny element builder so views stay declarative without a framework. Imported by the views.

/**
 * Builds an element. Attributes: `class`, `text`, `testid` (data-testid), `on<Event>` handlers,
 * `dataset` object, booleans set or remove the attribute, anything else via setAttribute.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...(Node | string | null | undefined | false | Array<Node | string | null | undefined | false>)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = String(value);
    else if (key === "text") el.textContent = String(value);
    else if (key === "testid") el.setAttribute("data-testid", String(value));
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) el.setAttribute(key, "");
    else if (key === "value" && "value" in el) /** @type {HTMLInputElement} */ (el).value = String(value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return el;
}

/**
 * Replaces an element's children.
 * @param {Element} el
 * @param {...Node} children
 */
export function replaceChildren(el, ...children) {
  el.replaceChildren(...children);
}

/**
 * A short local time for timestamps.
 * @param {string | null | undefined} iso
 */
export function shortTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}
