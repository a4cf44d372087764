// The task view: title, description, its sessions, and a form to start a session with an agent
// profile and an optional first prompt. Imported by main.js, which owns loading and routing.

import { renderMarkdown } from "./markdown.js";
import { stepLabel } from "./board.js";
import { h } from "./dom.js";
import { sessionName, stateWords } from "./session-words.js";
import { sessionsOfTask, taskPendingAction } from "./store.js";

/** @typedef {import("./store.js").StoreState} StoreState */

/**
 * @typedef {{taskId: string, loading: boolean, error: string | null,
 *   onBack: () => void, onSelect: (sessionId: string) => void, onChanges: () => void,
 *   onStart: (agent: string, prompt: string) => Promise<void>}} TaskViewModel
 */

/** Renders the task view; keeps the start form's drafts across re-renders. */
export class TaskView {
  constructor() {
    this.root = h("div", { class: "task-view", testid: "task-view" });
    this.header = h("div", { class: "sheet-header" });
    this.body = h("div", { class: "task-body" });
    this.sessions = h("ul", { class: "session-list", testid: "session-list" });
    this.status = h("p", { class: "status-line", testid: "task-status-line", role: "status" });
    // The configured profiles (GET /agents) as a choice; `builtin` until they are read.
    this.agent = /** @type {HTMLSelectElement} */ (h("select", { testid: "new-session-agent", "aria-label": "Agent profile" },
      h("option", { value: "builtin", text: "builtin" })));
    this.prompt = /** @type {HTMLTextAreaElement} */ (h("textarea", {
      rows: "3", placeholder: "First prompt (optional: defaults to the task description)",
      testid: "new-session-prompt", "aria-label": "First prompt",
    }));
    this.submit = /** @type {HTMLButtonElement} */ (h("button", { type: "submit", testid: "new-session-submit" }, "Start session"));
    /** @type {TaskViewModel | null} */
    this.model = null;
    const form = h("form", { class: "new-session", testid: "new-session-form", onSubmit: (/** @type {Event} */ e) => {
      e.preventDefault();
      void this.start();
    } }, h("h3", {}, "Start a session"), h("label", {}, "Agent", this.agent), h("label", {}, "Prompt", this.prompt), this.submit);
    this.root.append(this.header, this.body, h("h3", {}, "Sessions"), this.sessions, this.status, form);
  }

  /**
   * The agent profiles the server offers, the previous choice kept when it is still offered.
   * @param {string[]} names
   */
  setAgents(names) {
    if (!names.length) return;
    const chosen = this.agent.value;
    this.agent.replaceChildren(...names.map((n) => h("option", { value: n, text: n })));
    this.agent.value = names.includes(chosen) ? chosen : names.includes("builtin") ? "builtin" : names[0];
  }

  async start() {
    if (!this.model) return;
    this.submit.disabled = true;
    try {
      await this.model.onStart(this.agent.value.trim() || "builtin", this.prompt.value);
      this.prompt.value = "";
    } finally {
      this.submit.disabled = false;
    }
  }

  /**
   * @param {StoreState} state
   * @param {TaskViewModel} model
   */
  render(state, model) {
    this.model = model;
    const task = state.tasks[model.taskId];
    this.header.replaceChildren(
      h("button", { type: "button", class: "back", testid: "task-back", onClick: model.onBack, "aria-label": "Back to board" }, "← Board"),
      h("h2", { testid: "task-view-title", text: task?.title ?? (model.loading ? "Loading…" : "Task not found") }),
    );
    const pending = taskPendingAction(state, model.taskId);
    this.body.replaceChildren(
      task ? h("p", { class: "task-meta" }, h("span", { testid: "task-view-step", text: stepLabel(String(task.workflow_step ?? "")) }),
        pending ? h("span", { class: "pending-icon", testid: "task-view-pending", text: "?", title: `Pending ${pending}` }) : null) : "",
      task?.description ? h("div", { class: "task-description markdown", testid: "task-description" },
        ...renderMarkdown(String(task.description))) : "",
      task ? worktreeLine(task, model.onChanges) : "",
    );
    const sessions = sessionsOfTask(state, model.taskId);
    this.sessions.replaceChildren(
      ...sessions.map((s) => h("li", {}, h("button", {
        type: "button", class: "session-item", testid: `session-item-${s.id}`, onClick: () => model.onSelect(s.id),
      },
      h("span", { class: "session-name", testid: "session-name", text: sessionName(sessions, s.id) }),
      h("span", { class: "session-agent", text: String(s.agent ?? "agent") }),
      h("span", { class: "session-state", testid: "session-item-state", dataset: { state: String(s.state ?? "") },
        text: stateWords(s.state) }),
      s.is_primary ? h("span", { class: "badge", text: "primary" }) : null,
      s.pending_action ? h("span", { class: "pending-icon", testid: "session-pending-icon", text: "?", title: `Pending ${s.pending_action}` }) : null,
      ))),
    );
    this.status.textContent = model.error ?? (model.loading ? "Loading sessions…" : sessions.length ? "" : "No sessions yet.");
    this.status.classList.toggle("error", !!model.error);
  }
}

/**
 * A task with a repository: its worktree (branch, base, state) and the way to its Changes view.
 * @param {Record<string, any>} task
 * @param {() => void} onChanges
 */
function worktreeLine(task, onChanges) {
  const worktree = task.worktree;
  if (!task.repository && !worktree) return "";
  const where = worktree
    ? `${String(worktree.branch ?? "")} from ${String(worktree.base ?? "")}${worktree.state === "ready" ? "" : ` (${String(worktree.state ?? "")})`}`
    : `${String(task.repository)}: the worktree is made when the first session starts`;
  return h("p", { class: "task-worktree", testid: "task-worktree" },
    h("span", { class: "task-worktree-where", text: where }),
    worktree && worktree.state !== "removed"
      ? h("button", { type: "button", testid: "task-changes", onClick: onChanges }, "Changes")
      : null);
}
