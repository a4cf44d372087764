// Drawing one file's patch with diff2html (a maintained renderer from npm, vendored under
// /static/vendor by `npm run vendor`; no CDN), and reading which line a click landed on.
// The bundle and its styles are loaded the first time the Changes view needs them, so the board
// never pays for them. Imported by changes-view.js.

const VENDOR = "/static/vendor";
// The slim bundle carries highlight.js with the common languages; diff2html escapes the patch
// text and highlight.js only wraps it in spans, so no markup from a patch reaches the page.
const SCRIPT = `${VENDOR}/diff2html/diff2html-ui-slim.min.js`;
const STYLES = [
  { href: `${VENDOR}/diff2html/diff2html.min.css` },
  { href: `${VENDOR}/highlight.js/github.min.css`, media: "(prefers-color-scheme: light)" },
  { href: `${VENDOR}/highlight.js/github-dark.min.css`, media: "(prefers-color-scheme: dark)" },
];

/** @type {Promise<any> | null} */
let loading = null;

/** The Diff2HtmlUI class, loading the bundle and its styles once. @returns {Promise<any>} */
export function loadDiffRenderer() {
  const win = /** @type {any} */ (window);
  if (win.Diff2HtmlUI) return Promise.resolve(win.Diff2HtmlUI);
  if (loading) return loading;
  for (const style of STYLES) {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = style.href;
    if (style.media) link.media = style.media;
    document.head.append(link);
  }
  loading = new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = SCRIPT;
    script.onload = () => (win.Diff2HtmlUI ? resolve(win.Diff2HtmlUI) : reject(new Error("the diff renderer did not load")));
    script.onerror = () => {
      loading = null;
      script.remove();
      reject(new Error("the diff renderer could not be loaded"));
    };
    document.head.append(script);
  });
  return loading;
}

/**
 * Draws one file's patch into `target` ("unified" is diff2html's line-by-line, "split" its
 * side-by-side), with syntax highlighting from the file's extension.
 * @param {any} Diff2HtmlUI
 * @param {HTMLElement} target
 * @param {string} patch
 * @param {"unified" | "split"} layout
 */
export function drawPatch(Diff2HtmlUI, target, patch, layout) {
  const ui = new Diff2HtmlUI(target, patch, {
    outputFormat: layout === "split" ? "side-by-side" : "line-by-line",
    drawFileList: false,
    fileListToggle: false,
    fileContentToggle: false,
    stickyFileHeaders: false,
    matching: "lines",
    highlight: true,
    synchronisedScroll: true,
    colorScheme: "auto",
  });
  ui.draw();
  ui.highlightCode();
  markCommentableLines(target);
}

/**
 * @typedef {{line: number, side: "new" | "old"}} LineRef
 */

/**
 * Which line of which side a row of a drawn diff shows; null for a hunk header or a comment row.
 * In the unified table a row holds both numbers (the new one wins: that is the file the agent
 * left); in the split view the left table is the old file and the right one the new.
 * @param {Element} row a `tr` of a drawn diff
 * @returns {LineRef | null}
 */
export function lineOfRow(row) {
  const unified = row.querySelector(".d2h-code-linenumber");
  if (unified) {
    const next = Number.parseInt(unified.querySelector(".line-num2")?.textContent ?? "", 10);
    if (Number.isInteger(next)) return { line: next, side: "new" };
    const old = Number.parseInt(unified.querySelector(".line-num1")?.textContent ?? "", 10);
    return Number.isInteger(old) ? { line: old, side: "old" } : null;
  }
  const split = row.querySelector(".d2h-code-side-linenumber");
  if (!split) return null;
  const number = Number.parseInt(split.textContent ?? "", 10);
  if (!Number.isInteger(number)) return null;
  const tables = [...(row.closest(".d2h-files-diff")?.querySelectorAll(".d2h-file-side-diff") ?? [])];
  const left = tables[0]?.contains(row) ?? false;
  return { line: number, side: left ? "old" : "new" };
}

/**
 * Every numbered line's number cell becomes a keyboard target: Tab reaches it, Enter opens
 * the comment box like a click (the view listens on the container).
 * @param {HTMLElement} target
 */
function markCommentableLines(target) {
  for (const cell of target.querySelectorAll(".d2h-code-linenumber, .d2h-code-side-linenumber")) {
    const row = cell.closest("tr");
    const ref = row ? lineOfRow(row) : null;
    if (!ref) continue;
    cell.setAttribute("tabindex", "0");
    cell.setAttribute("role", "button");
    cell.setAttribute("aria-label", `Comment on ${ref.side === "old" ? "removed " : ""}line ${ref.line}`);
    row?.classList.add("commentable");
  }
}

/**
 * In the split view the other side's table gets an empty row of the same height at the same
 * place, so the two sides stay level around a comment row.
 * @param {HTMLTableRowElement} row the row just inserted
 * @returns {() => void} removes the row and its spacer
 */
export function levelOtherSide(row) {
  const sides = [...(row.closest(".d2h-files-diff")?.querySelectorAll(".d2h-file-side-diff tbody") ?? [])];
  const mine = row.closest("tbody");
  const other = sides.find((body) => body !== mine);
  if (!other || !mine) return () => row.remove();
  const index = [...mine.children].indexOf(row);
  const spacer = document.createElement("tr");
  spacer.className = "review-spacer";
  spacer.append(Object.assign(document.createElement("td"), { colSpan: 2 }));
  other.insertBefore(spacer, other.children[index] ?? null);
  const fit = () => { spacer.style.height = `${row.getBoundingClientRect().height}px`; };
  fit();
  const watch = new ResizeObserver(fit);
  watch.observe(row);
  return () => {
    watch.disconnect();
    spacer.remove();
    row.remove();
  };
}
