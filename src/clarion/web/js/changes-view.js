// The Changes view of a task (`#/tasks/<id>/changes`): what its agent changed in the task's
// worktree (GET /tasks/{id}/changes), a file list with +/- counts and each file's diff, unified
// or split. Clicking (or Enter on) a line opens a comment box under it; the comments and a
// summary gather into one review that "Send review" posts (POST /tasks/{id}/review), which
// starts the agent's next turn. Imported by main.js, which owns routing.

import { h } from "./dom.js";
import { drawPatch, levelOtherSide, lineOfRow, loadDiffRenderer } from "./diff-render.js";
import { humanError } from "./errors.js";
import {
  addComment, canSend, commentsAt, countsWords, draftWords, loadDraft, removeComment, reviewBody,
  reviewErrorWords, saveDraft, totalsWords,
} from "./review-draft.js";

/**
 * @typedef {import("./review-draft.js").Draft} Draft
 * @typedef {import("./review-draft.js").DraftComment} DraftComment
 * @typedef {import("./diff-render.js").LineRef} LineRef
 * @typedef {{path: string, old_path: string | null, status: string, additions: number,
 *   deletions: number, binary: boolean, patch: string | null, truncated?: boolean}} ChangedFile
 * @typedef {{api: import("./api.js").Api, taskId: string, title: () => string,
 *   primarySession: () => string | null, onBack: () => void,
 *   onOpenSession: (sessionId: string) => void}} ChangesDeps
 */

const LAYOUT_KEY = "clarion.diff-layout";

/** @returns {"unified" | "split"} the person's last choice, else split only on a wide screen */
function preferredLayout() {
  const saved = localStorage.getItem(LAYOUT_KEY);
  if (saved === "unified" || saved === "split") return saved;
  return matchMedia("(min-width: 1100px)").matches ? "split" : "unified";
}

export class ChangesView {
  /** @param {ChangesDeps} deps */
  constructor(deps) {
    this.deps = deps;
    /** @type {Draft} */
    this.draft = loadDraft(localStorage, deps.taskId);
    /** @type {"unified" | "split"} */
    this.layout = preferredLayout();
    /** @type {ChangedFile[]} */
    this.files = [];
    this.destroyed = false;
    this.loadCount = 0;
    /** @type {any} the renderer's class, once its bundle is loaded */
    this.Diff2HtmlUI = null;

    this.title = h("h2", { testid: "changes-title" });
    this.summary = h("span", { class: "changes-totals", testid: "changes-summary" });
    this.where = h("span", { class: "changes-where", testid: "changes-where" });
    this.layoutButtons = /** @type {HTMLButtonElement[]} */ (["unified", "split"].map((name) => h("button", {
      type: "button", class: "layout-choice", testid: `changes-layout-${name}`,
      onClick: () => this.setLayout(/** @type {"unified" | "split"} */ (name)),
    }, name === "unified" ? "Unified" : "Split")));
    this.status = h("p", { class: "status-line", testid: "changes-status", role: "status" });
    this.fileList = h("ul", { class: "changes-files", testid: "changes-file-list" });
    this.diffs = h("div", { class: "changes-diffs", testid: "changes-diffs" });
    this.diffs.addEventListener("click", (e) => this.onDiffClick(e));
    this.diffs.addEventListener("keydown", (e) => this.onDiffKey(e));

    this.count = h("span", { class: "review-count", testid: "review-count" });
    this.summaryInput = /** @type {HTMLTextAreaElement} */ (h("textarea", {
      rows: "3", testid: "review-summary", "aria-label": "Review summary",
      placeholder: "Summary for the agent (optional when you left line comments)",
      onInput: () => this.onSummaryInput(),
    }));
    this.summaryInput.value = this.draft.summary;
    this.reviewList = h("ol", { class: "review-list", testid: "review-list" });
    this.send = /** @type {HTMLButtonElement} */ (h("button", {
      type: "button", class: "primary", testid: "review-send", onClick: () => void this.sendReview(),
    }, "Send review"));
    this.reviewStatus = h("p", { class: "status-line review-status", testid: "review-status", role: "status" });
    this.panel = h("section", { class: "review-panel", testid: "review-panel", "aria-label": "Your review" },
      h("h3", {}, "Your review"), this.reviewList,
      h("label", { class: "review-summary-label" }, "Summary", this.summaryInput),
      h("div", { class: "review-actions" }, this.send, this.reviewStatus));
    this.bar = h("div", { class: "review-bar", testid: "review-bar" }, this.count,
      h("button", { type: "button", testid: "review-finish", onClick: () => this.finishReview() }, "Finish review"));

    this.root = h("div", { class: "changes-view", testid: "changes-view" },
      h("div", { class: "sheet-header" },
        h("button", { type: "button", class: "back", testid: "changes-back", onClick: deps.onBack,
          "aria-label": "Back to the task" }, "← Task"),
        this.title),
      h("div", { class: "changes-toolbar" }, this.summary, this.where, h("span", { class: "spacer" }),
        h("span", { class: "layout-choices", role: "group", "aria-label": "Diff layout" }, ...this.layoutButtons),
        h("button", { type: "button", testid: "changes-refresh", onClick: () => void this.load() }, "Refresh")),
      this.status, this.fileList, this.diffs, this.panel, this.bar);
    this.renderHeader();
    this.renderReview();
  }

  destroy() {
    this.destroyed = true;
  }

  renderHeader() {
    this.title.textContent = `Changes · ${this.deps.title()}`;
    for (const button of this.layoutButtons) {
      button.setAttribute("aria-pressed", String(button.dataset.testid === `changes-layout-${this.layout}`));
    }
  }

  async load() {
    const mine = ++this.loadCount;
    this.status.textContent = "Loading changes…";
    this.status.classList.remove("error");
    try {
      const [body, Diff2HtmlUI] = await Promise.all([this.deps.api.changes(this.deps.taskId), loadDiffRenderer()]);
      if (this.destroyed || mine !== this.loadCount) return;
      this.Diff2HtmlUI = Diff2HtmlUI;
      this.files = body.files ?? [];
      this.summary.textContent = totalsWords(body);
      this.where.textContent = `${String(body.branch ?? "")} against ${String(body.base ?? "")}`;
      this.status.textContent = "";
      this.renderHeader();
      this.renderFiles();
    } catch (err) {
      if (this.destroyed || mine !== this.loadCount) return;
      const e = /** @type {any} */ (err);
      this.status.textContent = e?.status === 404
        ? "This task has no worktree yet: it gets one when its first session starts on a task with a repository."
        : `Could not load the changes: ${humanError(err)}`;
      this.status.classList.add("error");
    }
  }

  /** @param {"unified" | "split"} layout */
  setLayout(layout) {
    this.layout = layout;
    localStorage.setItem(LAYOUT_KEY, layout);
    this.renderHeader();
    if (this.Diff2HtmlUI) this.renderFiles();
  }

  renderFiles() {
    this.fileList.replaceChildren(...this.files.map((file, index) => h("li", {},
      h("button", { type: "button", class: "changes-file-item", testid: "changes-file-item", dataset: { path: file.path },
        onClick: () => this.diffs.querySelector(`[data-index="${index}"]`)?.scrollIntoView({ block: "start" }) },
      h("span", { class: `file-status status-${file.status}`, testid: "file-status", text: file.status }),
      h("span", { class: "file-path", testid: "file-path", text: fileName(file) }),
      h("span", { class: "file-counts", testid: "file-counts", text: countsWords(file) })))));
    this.diffs.replaceChildren(...this.files.map((file, index) => this.fileSection(file, index)));
  }

  /** @param {ChangedFile} file @param {number} index */
  fileSection(file, index) {
    const section = h("section", { class: "changes-file", testid: "changes-file", dataset: { path: file.path, index: String(index) } });
    if (file.binary) {
      section.append(h("p", { class: "changes-note", testid: "changes-binary" }, `${fileName(file)}: a binary file (not shown)`));
      return section;
    }
    if (!file.patch) {
      section.append(h("p", { class: "changes-note" }, `${fileName(file)}: no text change`));
      return section;
    }
    const target = h("div", { class: "changes-diff" });
    section.append(target);
    drawPatch(this.Diff2HtmlUI, target, file.patch, this.layout);
    if (file.truncated) {
      section.append(h("p", { class: "changes-note", testid: "changes-truncated" },
        "The patch is cut here: it is longer than the server sends for one file. The counts are the whole file's."));
    }
    for (const comment of this.draft.comments.filter((c) => c.path === file.path)) this.showComment(section, comment);
    return section;
  }

  /** @param {Event} e */
  onDiffClick(e) {
    const target = /** @type {Element} */ (e.target);
    if (target.closest(".review-row") || String(getSelection() ?? "").length) return;
    const row = target.closest("tr.commentable");
    if (row) this.openBox(/** @type {HTMLTableRowElement} */ (row));
  }

  /** @param {KeyboardEvent} e */
  onDiffKey(e) {
    const target = /** @type {Element} */ (e.target);
    if ((e.key !== "Enter" && e.key !== " ") || target.getAttribute("role") !== "button") return;
    const row = target.closest("tr.commentable");
    if (!row) return;
    e.preventDefault();
    this.openBox(/** @type {HTMLTableRowElement} */ (row));
  }

  /**
   * Opens a comment box under a line (one per line: a second click focuses the open one).
   * @param {HTMLTableRowElement} row
   */
  openBox(row) {
    const ref = lineOfRow(row);
    const path = /** @type {HTMLElement | null} */ (row.closest("section.changes-file"))?.dataset.path;
    if (!ref || path === undefined) return;
    const open = /** @type {HTMLTextAreaElement | null} */ (rowsAfter(row).find((r) => r.classList.contains("review-box-row"))
      ?.querySelector("textarea") ?? null);
    if (open) return open.focus();
    const input = /** @type {HTMLTextAreaElement} */ (h("textarea", {
      rows: "3", testid: "review-comment-input", "aria-label": `Comment on ${path} line ${ref.line}`,
      placeholder: "What should the agent change here?",
    }));
    /** @type {() => void} */
    let close = () => {};
    const add = () => {
      const before = this.draft.comments.length;
      this.updateDraft(addComment(this.draft, { path, line: ref.line, side: ref.side, body: input.value }, newId()));
      if (this.draft.comments.length === before) return input.focus();
      close();
      const section = row.closest("section.changes-file");
      if (section) this.showComment(/** @type {HTMLElement} */ (section), this.draft.comments[this.draft.comments.length - 1]);
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); add(); }
      if (e.key === "Escape") { e.preventDefault(); close(); }
    });
    const box = reviewRow("review-box-row", h("div", { class: "review-box", testid: "review-box" },
      h("span", { class: "review-where", text: `${path}:${ref.line}${ref.side === "old" ? " (removed line)" : ""}` }),
      input,
      h("div", { class: "review-box-actions" },
        h("button", { type: "button", class: "primary", testid: "review-comment-add", onClick: add }, "Add comment"),
        h("button", { type: "button", testid: "review-comment-cancel", onClick: () => close() }, "Cancel"))));
    insertAfterRowAndComments(row, box);
    close = levelOtherSide(box);
    // The browser would scroll a wide diff sideways to the caret, taking the line numbers away.
    input.focus({ preventScroll: true });
    box.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  /**
   * Shows a gathered comment under its line, with a button that takes it out of the review.
   * @param {HTMLElement} section
   * @param {DraftComment} comment
   */
  showComment(section, comment) {
    const row = [...section.querySelectorAll("tr.commentable")].find((r) => {
      const ref = lineOfRow(r);
      return ref && ref.line === comment.line && ref.side === comment.side;
    });
    if (!row) return;
    /** @type {() => void} */
    let remove = () => {};
    const shown = reviewRow("review-comment-row", h("div", { class: "review-comment", testid: "review-comment",
      dataset: { path: comment.path, line: String(comment.line), side: comment.side } },
    h("span", { class: "review-comment-body", text: comment.body }),
    h("button", { type: "button", class: "secondary", testid: "review-comment-remove", onClick: () => {
      this.updateDraft(removeComment(this.draft, comment.id));
      remove();
    } }, "Remove")));
    insertAfterRowAndComments(/** @type {HTMLTableRowElement} */ (row), shown);
    remove = levelOtherSide(shown);
  }

  onSummaryInput() {
    this.updateDraft({ ...this.draft, summary: this.summaryInput.value });
  }

  /** @param {Draft} draft */
  updateDraft(draft) {
    this.draft = draft;
    saveDraft(localStorage, this.deps.taskId, draft);
    this.renderReview();
  }

  renderReview() {
    this.count.textContent = draftWords(this.draft);
    this.send.disabled = !canSend(this.draft);
    this.reviewList.replaceChildren(...this.draft.comments.map((c) => h("li", {},
      h("code", { text: `${c.path}${c.line === null ? "" : `:${c.line}`}${c.side === "old" ? " (removed line)" : ""}` }), " ", c.body)));
  }

  finishReview() {
    this.panel.scrollIntoView({ block: "end" });
    this.summaryInput.focus({ preventScroll: true });
  }

  async sendReview() {
    if (!canSend(this.draft)) return;
    this.send.disabled = true;
    this.reviewStatus.textContent = "Sending the review…";
    this.reviewStatus.classList.remove("error");
    delete this.reviewStatus.dataset.code;
    try {
      const result = await this.deps.api.review(this.deps.taskId, reviewBody(this.draft));
      if (this.destroyed) return;
      this.updateDraft({ comments: [], summary: "" });
      this.summaryInput.value = "";
      for (const row of this.diffs.querySelectorAll(".review-comment-row, .review-spacer")) row.remove();
      const session = this.deps.primarySession();
      this.reviewStatus.replaceChildren(`Review sent: the agent is working on it (turn ${String(result?.turn_id ?? "")}). `,
        session ? h("button", { type: "button", class: "secondary", testid: "review-open-session",
          onClick: () => this.deps.onOpenSession(session) }, "Open the session") : "");
    } catch (err) {
      if (this.destroyed) return;
      const e = /** @type {any} */ (err);
      this.reviewStatus.textContent = reviewErrorWords(err);
      this.reviewStatus.classList.add("error");
      this.reviewStatus.dataset.code = String(e?.code ?? "");
      this.renderReview();
      this.reviewStatus.scrollIntoView({ block: "nearest" });
    }
  }
}

/** @param {ChangedFile} file */
function fileName(file) {
  return file.old_path && file.old_path !== file.path ? `${file.old_path} → ${file.path}` : file.path;
}

function newId() {
  return `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
}

/** @param {string} kind @param {HTMLElement} content @returns {HTMLTableRowElement} */
function reviewRow(kind, content) {
  const row = /** @type {HTMLTableRowElement} */ (h("tr", { class: `review-row ${kind}` }));
  row.append(Object.assign(h("td", {}, content), { colSpan: 2 }));
  return row;
}

/**
 * The review rows (and, in the split view, the other side's spacers) that follow a line's row.
 * @param {Element} row @returns {Element[]}
 */
function rowsAfter(row) {
  const rows = [];
  const ours = (/** @type {Element | null} */ el) => !!el && (el.classList.contains("review-row") || el.classList.contains("review-spacer"));
  for (let next = row.nextElementSibling; ours(next); next = /** @type {Element} */ (next).nextElementSibling) rows.push(/** @type {Element} */ (next));
  return rows;
}

/** Inserts `added` after the line's row and any comment rows already under it. @param {Element} row @param {Element} added */
function insertAfterRowAndComments(row, added) {
  const after = rowsAfter(row).at(-1) ?? row;
  after.after(added);
}
