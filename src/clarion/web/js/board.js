// The task board: one column per workflow step, a card per task with its title, state and a
// question icon while its summary advertises a pending action. Imported by main.js.

import { h } from "./dom.js";
import { taskPendingAction } from "./store.js";

/** @typedef {import("./store.js").StoreState} StoreState */

export const DEFAULT_STEPS = ["backlog", "in_progress", "review", "done"];

/** @type {Record<string, string>} */
const STEP_LABELS = {
  backlog: "Backlog",
  in_progress: "In progress",
  review: "Review",
  done: "Done",
};

/** @param {string} step */
export function stepLabel(step) {
  return STEP_LABELS[step] ?? step;
}

/**
 * @param {StoreState} state
 * @param {string} taskId
 * @param {string | null} selectedTaskId
 * @param {(taskId: string) => void} onOpen
 */
function card(state, taskId, selectedTaskId, onOpen) {
  const task = state.tasks[taskId];
  const pending = taskPendingAction(state, taskId);
  const stateText = typeof task.state === "string" ? task.state : stepLabel(String(task.workflow_step ?? ""));
  return h(
    "button",
    {
      type: "button",
      class: `card${taskId === selectedTaskId ? " selected" : ""}${pending ? " has-pending" : ""}`,
      testid: `task-card-${taskId}`,
      dataset: { taskId, step: String(task.workflow_step ?? "") },
      onClick: () => onOpen(taskId),
    },
    h("span", { class: "card-title", testid: "task-title", text: task.title || "(untitled)" }),
    h(
      "span",
      { class: "card-meta" },
      h("span", { class: "card-state", testid: "task-state", text: stateText }),
      pending
        ? h("span", {
            class: "pending-icon",
            testid: "pending-icon",
            dataset: { action: pending },
            title: pending === "permission" ? "Waiting for a permission" : "Waiting for your answer",
            "aria-label": pending === "permission" ? "Permission pending" : "Question pending",
            text: "?",
          })
        : null,
    ),
  );
}

/**
 * Renders the columns into `root`.
 * @param {HTMLElement} root
 * @param {StoreState} state
 * @param {{steps: string[], selectedTaskId: string | null, onOpen: (taskId: string) => void}} view
 */
export function renderBoard(root, state, view) {
  const steps = view.steps.length ? view.steps : DEFAULT_STEPS;
  /** @type {Record<string, string[]>} */
  const byStep = Object.fromEntries(steps.map((s) => [s, []]));
  const ordered = Object.values(state.tasks).sort((a, b) =>
    String(a.created_at ?? "").localeCompare(String(b.created_at ?? "")) || a.id.localeCompare(b.id));
  for (const task of ordered) {
    const step = String(task.workflow_step ?? "backlog");
    (byStep[step] ?? byStep[steps[0]]).push(task.id);
  }
  root.replaceChildren(
    ...steps.map((step) =>
      h(
        "section",
        { class: "column", testid: `column-${step}`, dataset: { step } },
        h("h2", { class: "column-title" }, stepLabel(step), h("span", { class: "count", text: String(byStep[step].length) })),
        h("div", { class: "cards" }, byStep[step].map((id) => card(state, id, view.selectedTaskId, view.onOpen))),
      ),
    ),
  );
}
