// Clarion web UI entry point: wires the store, the HTTP client, the live feed, the hash router
// and the views. Loaded by index.html as /static/js/main.js; nothing imports it.
//
// Stable data-testid attributes (browser tests rely on them; keep docs/ui.md in sync):
//   Board:        board, column-<step>, task-card-<task_id>, task-title, task-state, pending-icon
//                 (data-action = clarification|permission), new-task-form, new-task-title,
//                 new-task-description, new-task-submit, board-status, connection-status,
//                 board-empty, pending-words, board-filters, board-search, board-filter-state,
//                 board-filter-workspace, shortcuts-button, shortcuts-help
//   Task view:    detail, task-view, task-back, task-view-title, task-view-step, task-view-pending,
//                 task-description, session-list, session-item-<session_id>, session-pending-icon,
//                 task-status-line, new-session-form, new-session-agent, new-session-prompt,
//                 new-session-submit, task-worktree, task-changes
//   Changes view: changes-view, changes-back, changes-title, changes-summary, changes-where,
//                 changes-layout-unified / changes-layout-split (aria-pressed), changes-refresh,
//                 changes-status, changes-file-list, changes-file-item (data-path) with
//                 file-status, file-path, file-counts; changes-diffs, changes-file (data-path),
//                 changes-binary, changes-truncated, review-box, review-comment-input,
//                 review-comment-add, review-comment-cancel, review-comment (data-path,
//                 data-line, data-side), review-comment-remove, review-panel, review-list,
//                 review-summary, review-send, review-status (data-code on a refusal),
//                 review-open-session, review-bar, review-count, review-finish
//   Session view: session-view, session-back, session-changes, session-state, transcript, message-<message_id>
//                 (data-type, data-author, data-status for questions), speaker,
//                 late-answer-<message_id>, question-status,
//                 turn-start-<turn_id>, turn-end-<turn_id>, prompt-input, prompt-send,
//                 prompt-status (data-queued="true" when the prompt was queued), session-cancel,
//                 session-finish, clarification-notice, winning-answer, show-question,
//                 delivery-ambiguous, resend-answer, agent-process-note
//   Overlay:      clarification-overlay (data-pending-id, data-state), dismiss-question,
//                 detached-notice, clarification-context, step-<n> (1-based), clarification-question
//                 (data-question-id), question-prompt, option-<question_id>-<option_id>,
//                 option-label, option-description, custom-text-<question_id>, clarification-error,
//                 step-back, step-next, skip-question, submit-answer
//   Permissions:  permission-panel, permission-title, permission-kind, permission-input,
//                 permission-option-<option_id> (data-kind), permission-error,
//                 permission-status (transcript row); errors: error-reason, error-detail,
//                 session-error

import { createApi } from "./api.js";
import { ChangesView } from "./changes-view.js";
import { DEFAULT_STEPS, renderBoard, stepLabel } from "./board.js";
import { noFilter, workspacesOf } from "./board-filter.js";
import { h } from "./dom.js";
import { SHORTCUTS, moveIndex, shortcutFor } from "./shortcuts.js";
import { ErrorLine, humanError, showConnection } from "./errors.js";
import { touchScreen } from "./focus.js";
import { beginOwnerLoad, decideOwnerLoad } from "./navigation.js";
import { formatRoute, parseRoute } from "./router.js";
import { SessionView } from "./session-view.js";
import {
  ClientStore, applyBoot, applySessionList, applySessionRow, applyTaskRead, beginTaskRead, sessionsOfTask,
} from "./store.js";
import { TaskView } from "./task-view.js";
import { InboxController, inboxMayChange } from "./inbox-controller.js";
import { InboxView } from "./inbox-view.js";
import { LiveConnection, wsUrl } from "./ws.js";

/** @typedef {import("./router.js").Route} Route */

const token = () => localStorage.getItem("clarion.token");
const api = createApi({ token });
const store = new ClientStore();

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const boardEl = $("board");
const detailEl = $("detail");
const boardStatus = new ErrorLine($("board-status"));
const connectionEl = $("connection-status");
const boardNotice = $("board-notice");
const banner = $("connection-banner");
const inbox = new InboxController({ api, countEl: $("inbox-count"), onChange: () => renderAll() });
const inboxView = new InboxView({ api, inbox, onBack: () => navigate({ name: "board" }) });

/** @type {string[]} */
let steps = DEFAULT_STEPS;
const taskView = new TaskView();
/** @type {{taskId: string | null, loading: boolean, error: string | null}} */
let taskViewState = { taskId: null, loading: false, error: null };
/** @type {SessionView | null} */
let sessionView = null;
/** @type {ChangesView | null} */
let changesView = null;
let loadCounter = 0;
let boardScrollY = 0;
let latestLoadId = 0;

const rememberKey = (/** @type {string} */ taskId) => `clarion.session.${taskId}`;

/** @param {Route} route @param {{replace?: boolean}} [opts] */
function navigate(route, opts = {}) {
  const hash = formatRoute(route);
  if (location.hash === hash) return onRoute();
  if (opts.replace) location.replace(hash);
  else location.hash = hash;
}

// ---- board -----------------------------------------------------------------------------------

async function loadBoard(withBoot = false) {
  try {
    if (withBoot) {
      const start = beginTaskRead(store.state);
      const boot = await api.boot();
      store.update((s) => applyBoot(s, boot, start));
    }
    const start = beginTaskRead(store.state);
    const snap = await api.workflowSnapshot();
    steps = (snap.steps ?? []).map((/** @type {any} */ st) => st.id);
    const tasks = (snap.steps ?? []).flatMap((/** @type {any} */ st) =>
      (st.tasks ?? []).map((/** @type {any} */ t) => ({ ...t, workflow_step: t.workflow_step ?? st.id })));
    store.update((s) => applyTaskRead(s, tasks, start, { complete: true }));
    boardStatus.clear("load");
  } catch (err) {
    boardStatus.show("load", `Could not load tasks: ${humanError(err)}`);
  }
  renderAll();
}

let refreshTimer = /** @type {ReturnType<typeof setTimeout> | null} */ (null);
/** Task moves have no notification of their own, so task-level events trigger a fresh read. */
function scheduleBoardRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    void loadBoard(false);
  }, 400);
}

function renderAll() {
  const route = parseRoute(location.hash);
  const selected = route.name === "board" || route.name === "inbox" ? null : route.taskId;
  renderBoard(boardEl, store.state, { steps, selectedTaskId: selected, onOpen: (id) => void openTask(id),
    onMove: (id, step) => void moveTask(id, step), filter: boardFilter });
  renderWorkspaceChoice();
  if (route.name === "task") renderTaskView(route.taskId);
  if (route.name === "changes") changesView?.renderHeader();
  if (route.name === "inbox") inboxView.render();
}

/**
 * Moves a task to another column through the workflow guard; a refusal says why.
 * @param {string} taskId
 * @param {string} step
 */
async function moveTask(taskId, step) {
  const title = String(store.state.tasks[taskId]?.title ?? "the task");
  try {
    const body = await api.moveTask(taskId, step);
    store.update((s) => applyTaskRead(s, [body.task], beginTaskRead(s)));
    boardStatus.clear("move");
    showBoardNotice(`Moved “${title}” to ${stepLabel(step)}.`);
  } catch (err) {
    const e = /** @type {any} */ (err);
    const why = e?.code === "pending_input"
      ? "an agent is waiting for your answer on this task; answer it first"
      : humanError(err);
    boardStatus.show("move", `Could not move “${title}” to ${stepLabel(step)}: ${why}.`);
  }
}

/** @param {string} text a passing, non-error line above the board */
function showBoardNotice(text) {
  boardNotice.textContent = text;
}

// ---- task and session navigation -------------------------------------------------------------

/**
 * Opens a task from the board: the task route first (the fallback is already in place), then a
 * fresh session list decides whether a session is selected.
 * @param {string} taskId
 */
async function openTask(taskId) {
  const loadId = ++loadCounter;
  latestLoadId = loadId;
  const load = beginOwnerLoad(store.state, taskId, loadId);
  taskViewState = { taskId, loading: true, error: null };
  navigate({ name: "task", taskId });
  /** @type {any[] | null} */
  let sessions = null;
  try {
    const body = await api.listSessions(taskId);
    sessions = body.sessions ?? [];
    store.update((s) => applySessionList(s, /** @type {any[]} */ (sessions)));
  } catch (err) {
    if (latestLoadId === loadId) taskViewState.error = `Could not load sessions: ${humanError(err)}`;
  }
  const decision = decideOwnerLoad({
    load, state: store.state, latestLoadId, sessions, failed: sessions === null,
    rememberedId: localStorage.getItem(rememberKey(taskId)),
  });
  if (decision.kind === "ignored") return;
  taskViewState.loading = false;
  if (decision.kind === "session") navigate({ name: "session", taskId, sessionId: decision.sessionId });
  else renderAll();
}

/** Loads a task's sessions for display (a typed or restored task URL). @param {string} taskId */
async function loadTaskSessions(taskId) {
  taskViewState = { taskId, loading: true, error: null };
  renderTaskView(taskId);
  try {
    if (!store.state.tasks[taskId]) {
      const body = await api.getTask(taskId);
      store.update((s) => applyTaskRead(s, [body.task], beginTaskRead(s)));
    }
    const body = await api.listSessions(taskId);
    store.update((s) => applySessionList(s, body.sessions ?? []));
  } catch (err) {
    if (taskViewState.taskId === taskId) taskViewState.error = humanError(err);
  }
  if (taskViewState.taskId === taskId) taskViewState.loading = false;
  renderAll();
}

/** @param {string} taskId */
function renderTaskView(taskId) {
  taskView.render(store.state, {
    taskId,
    loading: taskViewState.taskId === taskId && taskViewState.loading,
    error: taskViewState.taskId === taskId ? taskViewState.error : null,
    onBack: () => navigate({ name: "board" }),
    onSelect: (sessionId) => navigate({ name: "session", taskId, sessionId }),
    onChanges: () => navigate({ name: "changes", taskId }),
    onStart: async (agent, prompt) => {
      try {
        const body = await api.startSession(taskId, { agent, ...(prompt.trim() ? { prompt } : {}) });
        store.update((s) => applySessionRow(s, body.session));
        // Only open the new session if the person is still on this task: never pull them away.
        const here = parseRoute(location.hash);
        if (here.name === "task" && here.taskId === taskId) {
          navigate({ name: "session", taskId, sessionId: body.session.id });
        } else {
          showBoardNotice(`Started a session on “${String(store.state.tasks[taskId]?.title ?? "a task")}”.`);
        }
      } catch (err) {
        taskViewState.error = `Could not start a session: ${humanError(err)}`;
        renderTaskView(taskId);
      }
    },
  });
}

function onRoute() {
  const route = parseRoute(location.hash);
  const loadingTask = taskViewState.taskId;
  if (route.name === "board" || route.name === "inbox" || route.taskId !== loadingTask) latestLoadId = ++loadCounter;
  // On a phone the board is hidden under an open sheet: back on the board, the list is where
  // the person left it.
  const wasBoard = !document.body.classList.contains("has-detail");
  if (wasBoard && route.name !== "board") boardScrollY = window.scrollY;
  document.body.classList.toggle("has-detail", route.name !== "board");
  // A diff needs the width: the Changes view takes most of a wide screen.
  document.body.classList.toggle("wide-detail", route.name === "changes");
  // On a wide screen the inbox takes the page's width: the board beside it would be empty space.
  document.body.classList.toggle("inbox-page", route.name === "inbox");
  if (!wasBoard && route.name === "board") requestAnimationFrame(() => window.scrollTo(0, boardScrollY));
  if (route.name !== "session" && sessionView) {
    sessionView.destroy();
    sessionView = null;
  }
  if (changesView && (route.name !== "changes" || changesView.deps.taskId !== route.taskId)) {
    changesView.destroy();
    changesView = null;
  }
  if (route.name === "board" || route.name === "inbox") {
    taskViewState = { taskId: null, loading: false, error: null };
    detailEl.replaceChildren(...(route.name === "inbox" ? [inboxView.root] : []));
  } else if (route.name === "task") {
    detailEl.replaceChildren(taskView.root);
    if (taskViewState.taskId !== route.taskId) void loadTaskSessions(route.taskId);
  } else if (route.name === "changes") {
    if (!changesView) openChanges(route.taskId);
  } else {
    localStorage.setItem(rememberKey(route.taskId), route.sessionId);
    if (!sessionView || sessionView.deps.sessionId !== route.sessionId) {
      sessionView?.destroy();
      const taskId = route.taskId;
      sessionView = new SessionView({ api, store, taskId, sessionId: route.sessionId,
        onBack: () => { taskViewState = { taskId: null, loading: false, error: null }; navigate({ name: "task", taskId }); },
        onChanges: () => navigate({ name: "changes", taskId }) });
      detailEl.replaceChildren(sessionView.root);
      void sessionView.load();
    }
  }
  renderAll();
}

/** The Changes view of a task; its sessions are read too, for the review's way to the session. @param {string} taskId */
function openChanges(taskId) {
  const view = new ChangesView({
    api, taskId,
    title: () => String(store.state.tasks[taskId]?.title ?? "task"),
    primarySession: () => {
      const sessions = sessionsOfTask(store.state, taskId);
      return (sessions.find((s) => s.is_primary) ?? sessions[0])?.id ?? null;
    },
    onBack: () => { taskViewState = { taskId: null, loading: false, error: null }; navigate({ name: "task", taskId }); },
    onOpenSession: (sessionId) => navigate({ name: "session", taskId, sessionId }),
  });
  changesView = view;
  detailEl.replaceChildren(view.root);
  void view.load();
  void (async () => {
    try {
      if (!store.state.tasks[taskId]) {
        const body = await api.getTask(taskId);
        store.update((s) => applyTaskRead(s, [body.task], beginTaskRead(s)));
      }
      const body = await api.listSessions(taskId);
      store.update((s) => applySessionList(s, body.sessions ?? []));
    } catch {
      // the view still shows the changes; the review's link to the session is what is missing
    }
  })();
}

// ---- live feed, create form, start -----------------------------------------------------------

const live = new LiveConnection({
  url: wsUrl(location, token()),
  onStatus: (status) => showConnection(status, { statusEl: connectionEl, banner, errorLine: boardStatus }),
  onNotification: (action, payload) => {
    store.notify(action, payload);
    sessionView?.onNotification(action, payload);
    if (action.startsWith("task.") || action === "session.state_changed") scheduleBoardRefresh();
    if (inboxMayChange(action, payload)) inbox.schedule();
  },
  onReconnect: () => {
    void loadBoard(true);
    void inbox.refresh();
// The profiles a session can start with, for the task view's choice.
api.agents().then((body) => taskView.setAgents((body.agents ?? []).map((/** @type {any} */ a) => String(a.name))),
  () => { /* the choice keeps `builtin`; starting still says what went wrong */ });
    inboxView.clearErrors();
    const route = parseRoute(location.hash);
    if (route.name === "task") void loadTaskSessions(route.taskId);
    if (sessionView) void sessionView.load();
  },
});

$("new-task-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const title = /** @type {HTMLInputElement} */ ($("new-task-title"));
  const description = /** @type {HTMLTextAreaElement} */ ($("new-task-description"));
  if (!title.value.trim()) return;
  try {
    const body = await api.createTask({ title: title.value.trim(), description: description.value });
    store.update((s) => applyTaskRead(s, [body.task], beginTaskRead(s)));
    title.value = "";
    description.value = "";
    boardStatus.clear("create");
  } catch (err) {
    boardStatus.show("create", `Could not create the task: ${humanError(err)}`);
  }
});

// ---- search, filters and keyboard shortcuts -------------------------------------------------

let boardFilter = noFilter();
const searchEl = /** @type {HTMLInputElement} */ ($("board-search"));
// "(/)" is a keyboard hint: a touch screen has no such key to press.
if (touchScreen()) searchEl.placeholder = "Search tasks";
const stateEl = /** @type {HTMLSelectElement} */ ($("board-filter-state"));
const workspaceEl = /** @type {HTMLSelectElement} */ ($("board-filter-workspace"));
const helpEl = /** @type {HTMLDialogElement} */ ($("shortcuts-help"));

function readFilter() {
  boardFilter = { text: searchEl.value, state: /** @type {any} */ (stateEl.value), workspace: workspaceEl.value };
  renderAll();
}
searchEl.addEventListener("input", readFilter);
stateEl.addEventListener("change", readFilter);
workspaceEl.addEventListener("change", readFilter);

/** The workspace choice appears once tasks of two or more workspaces are on the board. */
function renderWorkspaceChoice() {
  const names = workspacesOf(Object.values(store.state.tasks));
  const key = names.join("\n");
  if (workspaceEl.dataset.names === key) return;
  workspaceEl.dataset.names = key;
  const chosen = workspaceEl.value;
  workspaceEl.replaceChildren(h("option", { value: "", text: "All workspaces" }),
    ...names.map((n) => h("option", { value: n, text: n })));
  workspaceEl.value = names.includes(chosen) ? chosen : "";
  workspaceEl.hidden = names.length < 2;
}

helpEl.append(h("h2", { class: "confirm-question", text: "Keyboard shortcuts" }),
  h("dl", { class: "shortcut-list" }, ...SHORTCUTS.flatMap(([keys, what]) => [h("dt", {}, h("kbd", { text: keys })), h("dd", { text: what })])),
  h("form", { method: "dialog", class: "confirm-actions" }, h("button", { type: "submit", testid: "shortcuts-close" }, "Close")));
/** The test id of the control that had the focus when the help opened (see the close handler). */
let helpOpener = /** @type {string | undefined} */ (undefined);
function toggleHelp() {
  if (helpEl.open) return helpEl.close();
  const active = document.activeElement;
  helpOpener = active instanceof HTMLElement ? active.dataset.testid : undefined;
  helpEl.showModal();
}
// The board may be rebuilt while the help is open (any live change does it): the card that had
// the focus is then a new element, and the browser, unable to give the focus back to the old
// one, would leave it nowhere. Give it to the new card.
helpEl.addEventListener("close", () => {
  const active = document.activeElement;
  if (!helpOpener || (active && active !== document.body && !helpEl.contains(active))) return;
  /** @type {HTMLElement | null} */ (document.querySelector(`[data-testid="${CSS.escape(helpOpener)}"]`))?.focus();
});
$("shortcuts-button").addEventListener("click", toggleHelp);

/** Moves the focus to the next or previous card (board) or line (inbox). @param {1 | -1} step */
function moveFocus(step) {
  const route = parseRoute(location.hash);
  const selector = route.name === "inbox" ? "[data-testid=inbox-row]" : "#board .card-open";
  const items = /** @type {HTMLElement[]} */ ([...document.querySelectorAll(selector)]).filter((el) => el.getClientRects().length);
  const next = moveIndex(items.indexOf(/** @type {HTMLElement} */ (document.activeElement)), items.length, step);
  if (next >= 0) items[next].focus();
}

let afterG = false;
document.addEventListener("keydown", (e) => {
  const target = /** @type {HTMLElement} */ (e.target);
  const inText = ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable;
  // The question box and the permission panel have their own keys while they have focus. A
  // closed dialog may still hold the focus for a moment after it closed: its keys are shortcuts.
  if (target.closest?.(".overlay:not([hidden]), dialog[open]")) return;
  const result = shortcutFor({ key: e.key, ctrlKey: e.ctrlKey, altKey: e.altKey, metaKey: e.metaKey, inText }, afterG);
  afterG = result.afterG;
  if (!result.shortcut) return;
  e.preventDefault();
  if (result.shortcut === "help") toggleHelp();
  else if (result.shortcut === "search") {
    if (document.body.classList.contains("has-detail") && matchMedia("(max-width: 700px)").matches) navigate({ name: "board" });
    requestAnimationFrame(() => searchEl.focus());
  } else if (result.shortcut === "next") moveFocus(1);
  else if (result.shortcut === "previous") moveFocus(-1);
  else if (result.shortcut === "inbox") navigate({ name: "inbox" });
  else if (result.shortcut === "board") navigate({ name: "board" });
});

$("connection-retry").addEventListener("click", () => live.retryNow());
window.addEventListener("online", () => live.retryNow());
store.subscribe(() => renderAll());
window.addEventListener("hashchange", onRoute);
live.start();
void loadBoard(true).then(onRoute);
void inbox.refresh();
// The profiles a session can start with, for the task view's choice.
api.agents().then((body) => taskView.setAgents((body.agents ?? []).map((/** @type {any} */ a) => String(a.name))),
  () => { /* the choice keeps `builtin`; starting still says what went wrong */ });
