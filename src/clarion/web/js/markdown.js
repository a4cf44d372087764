// A small, safe Markdown subset for questions, task descriptions and agent messages:
// paragraphs, headings, bullet and numbered lists, fenced code, inline code, bold, italic and
// http(s)/mailto links. Text never becomes HTML: the parser yields plain values and the builder
// makes elements with textContent, so `<script>` in an agent's text shows as those characters.
// Imported by the views; `parseMarkdown` is pure (tested under node).

import { h } from "./dom.js";

/**
 * @typedef {{t: "text" | "code" | "strong" | "em", text: string} | {t: "link", text: string, href: string}} Inline
 * @typedef {{type: "p" | "h", level?: number, inlines: Inline[]} | {type: "ul" | "ol", items: Inline[][]}
 *   | {type: "code", text: string}} Block
 */

const SAFE_HREF = /^(https?:\/\/|mailto:)/i;
// Inline code, bold, italic (* or _), a link; the first match wins, the rest is plain text.
const INLINE = /`([^`]+)`|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])|\[([^\]]+)\]\(([^)\s]+)\)/;

/**
 * @param {string} text
 * @returns {Inline[]}
 */
export function parseInline(text) {
  /** @type {Inline[]} */
  const out = [];
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) { out.push({ t: "text", text: rest }); break; }
    if (m.index > 0) out.push({ t: "text", text: rest.slice(0, m.index) });
    if (m[1] !== undefined) out.push({ t: "code", text: m[1] });
    else if (m[2] !== undefined || m[3] !== undefined) out.push({ t: "strong", text: m[2] ?? m[3] });
    else if (m[4] !== undefined || m[5] !== undefined) out.push({ t: "em", text: m[4] ?? m[5] });
    else if (SAFE_HREF.test(m[7])) out.push({ t: "link", text: m[6], href: m[7] });
    else out.push({ t: "text", text: m[0] });
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

/**
 * @param {string} source
 * @returns {Block[]}
 */
export function parseMarkdown(source) {
  /** @type {Block[]} */
  const blocks = [];
  const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
  /** @type {string[]} */
  let para = [];
  const flush = () => {
    if (para.length) blocks.push({ type: "p", inlines: parseInline(para.join("\n")) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flush();
      /** @type {string[]} */
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      blocks.push({ type: "code", text: code.join("\n") });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      blocks.push({ type: "h", level: heading[1].length, inlines: parseInline(heading[2]) });
      continue;
    }
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (bullet || numbered) {
      flush();
      const type = bullet ? "ul" : "ol";
      const last = blocks[blocks.length - 1];
      const item = parseInline((bullet ?? numbered)?.[1] ?? "");
      if (last && last.type === type && lines[i - 1]?.trim()) last.items.push(item);
      else blocks.push({ type, items: [item] });
      continue;
    }
    if (!line.trim()) { flush(); continue; }
    para.push(line);
  }
  flush();
  return blocks;
}

/**
 * @param {Inline[]} inlines
 * @param {boolean} [links] false inside a control (a link in a button is not one to tap): its text
 */
function inlineNodes(inlines, links = true) {
  return inlines.map((i) => {
    if (i.t === "text") return document.createTextNode(i.text);
    if (i.t === "link" && !links) return h("span", { class: "link-text", text: i.text });
    if (i.t === "link") return h("a", { href: i.href, target: "_blank", rel: "noopener noreferrer", text: i.text });
    return h(i.t, { text: i.text });
  });
}

/**
 * The elements for a Markdown text (append them to a `.markdown` container).
 * @param {string} source
 * @returns {HTMLElement[]}
 */
export function renderMarkdown(source) {
  return parseMarkdown(source).map((b) => {
    if (b.type === "code") return h("pre", {}, h("code", { text: b.text }));
    if (b.type === "ul" || b.type === "ol") return h(b.type, {}, b.items.map((item) => h("li", {}, inlineNodes(item))));
    // Headings start at h3: the page's own h1/h2 stay the outline.
    const tag = b.type === "h" ? `h${Math.min(6, (b.level ?? 1) + 2)}` : "p";
    return h(tag, {}, inlineNodes(/** @type {{inlines: Inline[]}} */ (b).inlines));
  });
}

/**
 * The inline nodes of a one-line Markdown text (an option's label or description): code, bold,
 * italic and links, no blocks. Append them to an inline element.
 * @param {string} source
 * @param {{links?: boolean}} [options] `links: false` inside a button: links become their text
 * @returns {Node[]}
 */
export function renderInlineMarkdown(source, options = {}) {
  return inlineNodes(parseInline(String(source ?? "").replace(/\s*\n\s*/g, " ")), options.links ?? true);
}
