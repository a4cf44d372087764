// The task board: one column per workflow step, a card per task with its title, state and a
// question icon while its summary advertises a pending action. Imported by main.js.

import { h } from "./dom.js";
import { taskMatches } from "./board-filter.js";
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
 * @typedef {{steps: string[], selectedTaskId: string | null, onOpen: (taskId: string) => void,
 *   onMove: (taskId: string, step: string) => void, filter?: import("./board-filter.js").BoardFilter}} BoardView
 */

/** The drag payload type: a task id dragged from a card. */
const DRAG_TYPE = "application/x-clarion-task";

/**
 * While a card is pressed or dragged the board is not rebuilt: replacing the card under the
 * person's pointer would end the drag before it starts (the browser starts a drag only from the
 * element the button went down on, once the pointer moves) or lose the click. A render asked for
 * meanwhile is kept (the newest), the board says it is busy, and the render is done when the
 * press or the drag ends.
 * @type {{pressed: boolean, active: boolean, deferred: null | (() => void)}}
 */
const drag = { pressed: false, active: false, deferred: null };

function renderDeferred() {
  if (drag.pressed || drag.active) return;
  const render = drag.deferred;
  drag.deferred = null;
  render?.();
}

function dragEnded() {
  drag.active = false;
  drag.pressed = false;
  renderDeferred();
}

/** A press ends with the button's release anywhere, or when the window loses focus mid-press.
 * The deferred render waits one task so the release's click still reaches the card it pressed. */
function pressEnded() {
  if (!drag.pressed) return;
  drag.pressed = false;
  setTimeout(renderDeferred, 0);
}
document.addEventListener("mouseup", pressEnded, true);
window.addEventListener("blur", pressEnded);

/**
 * A card: opens the task on click (or Enter on its title button); drags to another column; and
 * "◀ / ▶" buttons move it one step by keyboard or touch.
 * @param {StoreState} state
 * @param {string} taskId
 * @param {BoardView} view
 */
function card(state, taskId, view) {
  const task = state.tasks[taskId];
  const pending = taskPendingAction(state, taskId);
  const step = String(task.workflow_step ?? "");
  const title = task.title || "(untitled)";
  const stateText = typeof task.state === "string" ? task.state : stepLabel(step);
  const at = view.steps.indexOf(step);
  const mover = (/** @type {number} */ delta, /** @type {string} */ arrow) => {
    const target = view.steps[at + delta];
    return h("button", {
      type: "button", class: "move", testid: `move-${delta < 0 ? "left" : "right"}-${taskId}`,
      disabled: at < 0 || !target, "aria-label": target ? `Move “${title}” to ${stepLabel(target)}` : null,
      title: target ? `Move to ${stepLabel(target)}` : null,
      onClick: (/** @type {Event} */ e) => { e.stopPropagation(); if (target) view.onMove(taskId, target); },
    }, arrow);
  };
  const el = h(
    "article",
    {
      class: `card${taskId === view.selectedTaskId ? " selected" : ""}${pending ? " has-pending" : ""}`,
      testid: `task-card-${taskId}`, draggable: "true",
      dataset: { taskId, step },
      onClick: () => view.onOpen(taskId),
      onMousedown: (/** @type {MouseEvent} */ e) => { if (e.button === 0) drag.pressed = true; },
      onDragend: dragEnded,
      onDragstart: (/** @type {DragEvent} */ e) => {
        drag.active = true;
        e.dataTransfer?.setData(DRAG_TYPE, taskId);
        e.dataTransfer?.setData("text/plain", taskId);
        if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
      },
    },
    h("button", { type: "button", class: "card-open", testid: `task-open-${taskId}`, "aria-label": `Open “${title}”` },
      h("span", { class: "card-title", testid: "task-title", text: title })),
    h(
      "span",
      { class: "card-meta" },
      h("span", { class: "card-state", testid: "task-state", text: stateText }),
      pending
        ? h("span", { class: "pending-badge", title: pending === "permission" ? "Waiting for a permission" : "Waiting for your answer" },
          h("span", {
            class: "pending-icon",
            testid: "pending-icon",
            dataset: { action: pending },
            "aria-hidden": "true",
            text: "?",
          }),
          h("span", { class: "pending-words", testid: "pending-words",
            text: pending === "permission" ? "Needs a decision" : "Needs your answer" }))
        : null,
      h("span", { class: "move-buttons" }, mover(-1, "◀"), mover(1, "▶")),
    ),
  );
  return el;
}

/**
 * A column: its cards, and a drop target for cards dragged from another column.
 * @param {string} step
 * @param {string[]} ids
 * @param {StoreState} state
 * @param {BoardView} view
 */
function column(step, ids, state, view) {
  const el = h(
    "section",
    { class: "column", testid: `column-${step}`, dataset: { step }, "aria-label": stepLabel(step) },
    h("h2", { class: "column-title" }, stepLabel(step), h("span", { class: "count", text: String(ids.length) })),
    h("div", { class: "cards" }, ids.length ? ids.map((id) => card(state, id, view))
      : h("p", { class: "column-empty", text: "No tasks" })),
  );
  el.addEventListener("dragover", (e) => {
    if (!e.dataTransfer?.types.includes(DRAG_TYPE)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "move";
    el.classList.add("drop-target");
  });
  el.addEventListener("dragleave", () => el.classList.remove("drop-target"));
  el.addEventListener("drop", (e) => {
    el.classList.remove("drop-target");
    const taskId = e.dataTransfer?.getData(DRAG_TYPE);
    if (!taskId) return;
    e.preventDefault();
    if (state.tasks[taskId] && String(state.tasks[taskId].workflow_step ?? "") !== step) view.onMove(taskId, step);
  });
  return el;
}

/**
 * Renders the columns into `root`.
 * @param {HTMLElement} root
 * @param {StoreState} state
 * @param {BoardView} view
 */
export function renderBoard(root, state, view) {
  if (drag.pressed || drag.active) {
    drag.deferred = () => renderBoard(root, state, view);
    root.setAttribute("aria-busy", "true");
    return;
  }
  // This render is the newest: a deferred one still queued (a press's release waits a task
  // before it runs it) would put older state back.
  drag.deferred = null;
  root.removeAttribute("aria-busy");
  const steps = view.steps.length ? view.steps : DEFAULT_STEPS;
  /** @type {Record<string, string[]>} */
  const byStep = Object.fromEntries(steps.map((s) => [s, []]));
  const ordered = Object.values(state.tasks).sort((a, b) =>
    String(a.created_at ?? "").localeCompare(String(b.created_at ?? "")) || a.id.localeCompare(b.id));
  const shown = view.filter ? ordered.filter((t) => taskMatches(t, taskPendingAction(state, t.id), /** @type {any} */ (view.filter))) : ordered;
  for (const task of shown) {
    const step = String(task.workflow_step ?? "backlog");
    (byStep[step] ?? byStep[steps[0]]).push(task.id);
  }
  const full = { ...view, steps };
  // Every change rebuilds the board: keyboard focus stays on the same control (a moved card's
  // button follows the card to its new column).
  const active = document.activeElement;
  const focused = active instanceof HTMLElement && root.contains(active) ? active.dataset.testid : undefined;
  const empty = ordered.length === 0
    ? h("div", { class: "board-empty", testid: "board-empty" },
      h("strong", { text: "No tasks yet." }),
      h("span", { text: " To start an agent: create a task with the form at the top (a title, and a description the agent can read), open it, pick an agent profile and press Start session. A first prompt is optional: the agent starts from the description. Its questions then appear here and in the Inbox." }))
    : null;
  root.replaceChildren(...(empty ? [empty] : []), ...steps.map((step) => column(step, byStep[step], state, full)));
  if (focused) /** @type {HTMLElement | null} */ (root.querySelector(`[data-testid="${CSS.escape(focused)}"]`))?.focus();
}
