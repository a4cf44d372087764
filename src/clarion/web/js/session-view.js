// The session view: transcript (turn boundaries, prompts, agent messages, thoughts, tool calls,
// questions), the clarification overlay for the session's current bundle, a prompt box, and
// Cancel / Finish. Live through notifications main.js forwards. Imported by main.js.

import { elsewhereOutcome } from "./answer-outcome.js";
import { Composer } from "./composer.js";
import { h } from "./dom.js";
import { forgetDraft } from "./drafts.js";
import { humanError } from "./errors.js";
import { touchScreen } from "./focus.js";
import { ClarificationOverlay } from "./overlay.js";
import { PermissionPanel } from "./permission-panel.js";
import { sessionName, stateWords } from "./session-words.js";
import { applySessionRow, sessionsOfTask } from "./store.js";
import {
  applyTranscriptEvent,
  candidateBundles,
  emptyTranscript,
  freshAgentText,
  pendingPermission,
  transcriptItems,
} from "./transcript.js";
import { renderItem, resendAnswer } from "./transcript-view.js";

/** @typedef {import("./api.js").Api} Api */
/** @typedef {import("./store.js").ClientStore} ClientStore */
/** @typedef {import("./transcript.js").Message} Message */
/** @typedef {import("./transcript.js").TranscriptItem} TranscriptItem */

const ACTIVE_STATES = new Set(["active_live", "active_detached"]);
const FINAL_STATES = new Set(["terminal", "superseded_history"]);
/** How many candidate bundles, newest first, are asked about before concluding none is active. */
const MAX_BUNDLE_PROBES = 3;

export class SessionView {
  /**
   * @param {{api: Api, store: ClientStore, taskId: string, sessionId: string, onBack: () => void,
   *   onChanges?: () => void}} deps
   */
  constructor(deps) {
    this.deps = deps;
    this.transcript = emptyTranscript();
    this.bundleGeneration = 0;
    /** @type {Set<string>} pending ids hidden locally with Escape */
    this.dismissed = new Set();
    /** @type {Set<string>} pending ids this browser already resolved */
    this.resolved = new Set();
    /** @type {Set<string>} pending ids the server reported terminal or superseded */
    this.finalBundles = new Set();
    /** @type {Set<string>} pending ids the server reported superseded (read so in the transcript) */
    this.superseded = new Set();
    this.lastPending = /** @type {string | null | undefined} */ (undefined);
    this.overlay = new ClarificationOverlay({
      api: deps.api,
      onDismiss: () => {
        // Escape leaves focus on the one control that brings the question back.
        this.renderShowQuestion();
        this.showQuestion.focus();
      },
      onClosed: (pendingId, outcome) => {
        this.resolved.add(pendingId);
        this.setNotice(outcome.text, outcome.winner);
        // On a touch screen focusing the box would open the keyboard over the outcome.
        if ((!document.activeElement || document.activeElement === document.body) && !touchScreen()) {
          this.composer.input.focus();
        }
        // After a lost race the transcript may be stale (a cut live feed): read it again.
        if (outcome.kind === "conflict") void this.load();
        else void this.refreshBundle();
      },
    });
    /** @type {Set<string>} permission requests this browser already decided */
    this.decidedPermissions = new Set();
    this.permissionPanel = new PermissionPanel({
      api: deps.api,
      onClosed: (messageId, text) => {
        this.decidedPermissions.add(messageId);
        this.setNotice(text);
      },
    });
    this.header = h("div", { class: "sheet-header" });
    this.list = h("div", { class: "transcript", testid: "transcript" });
    // New agent messages are read out here (the transcript itself is rebuilt on each change).
    this.announcer = h("div", { class: "visually-hidden", testid: "agent-announcer", role: "status",
      "aria-live": "polite" });
    /** @type {Set<string>} agent messages already in the transcript (not announced again) */
    this.known = new Set();
    this.list.addEventListener("click", (event) => {
      const target = /** @type {Element} */ (event.target);
      const button = /** @type {HTMLButtonElement | null} */ (target.closest("[data-resend]"));
      if (button?.dataset.resend) void resendAnswer(deps.api, button.dataset.resend, button, (text) => this.setNotice(text));
    });
    this.showQuestion = h("button", { type: "button", class: "show-question", testid: "show-question", hidden: true,
      onClick: () => this.restoreQuestion() }, "Show question");
    this.notice = h("div", { class: "notice", testid: "clarification-notice", role: "status", hidden: true });
    this.composer = new Composer({ api: deps.api, sessionId: deps.sessionId, onChange: () => this.renderHeader() });
    this.root = h("div", { class: "session-view", testid: "session-view", dataset: { sessionId: deps.sessionId } },
      this.header, this.list, this.notice, this.showQuestion, this.permissionPanel.root, this.overlay.root,
      ...this.composer.parts, this.announcer);
    this.unsubscribe = deps.store.subscribe(() => this.onStore());
    this.renderHeader();
  }

  destroy() {
    this.unsubscribe();
    this.bundleGeneration += 1;
  }

  /** Loads the session, its turns and its messages; called on open and after a reconnect. */
  async load() {
    const { api, store, sessionId } = this.deps;
    // An error line from before (the server could not be reached) no longer holds.
    this.overlay.clearError();
    try {
      const [session, turns, messages] = await Promise.all([
        api.getSession(sessionId), api.turns(sessionId), api.allMessages(sessionId),
      ]);
      store.update((s) => applySessionRow(s, session.session));
      this.transcript = { turns: turns.turns ?? [], messages: [] };
      for (const m of messages) this.transcript = applyTranscriptEvent(this.transcript, sessionId, "session.message.added", m);
      this.renderTranscript(true);
      this.refreshPermission();
      await this.refreshBundle();
    } catch (err) {
      this.setNotice(`Could not load this session: ${humanError(err)}`);
    }
  }

  /**
   * @param {string} action
   * @param {any} payload
   */
  onNotification(action, payload) {
    if (!payload || payload.session_id !== this.deps.sessionId) return;
    const next = applyTranscriptEvent(this.transcript, this.deps.sessionId, action, payload);
    if (next !== this.transcript) {
      this.transcript = next;
      this.renderTranscript(false);
      this.refreshPermission();
    }
    // The row's `error` and `agent_process` fields travel in no event: read the row again.
    if ((payload.type === "error" && action === "session.message.added") ||
        action === "session.state_changed") {
      void this.reloadSession();
    }
    // `clarification.waiting.updated`: a deadline moved or the question was escalated.
    if (payload.type === "clarification_request" || action === "session.turn.started" ||
        action === "session.turn.completed" || action === "clarification.waiting.updated") {
      void this.refreshBundle();
    }
  }

  onStore() {
    this.renderHeader();
    const session = this.deps.store.state.sessions[this.deps.sessionId];
    const pending = session?.pending_action ?? null;
    if (this.lastPending !== undefined && pending !== this.lastPending) void this.refreshBundle();
    this.lastPending = pending;
  }

  /** The session row again (its `error` and `agent_process` are not carried by events). */
  async reloadSession() {
    try {
      const session = await this.deps.api.getSession(this.deps.sessionId);
      this.deps.store.update((s) => applySessionRow(s, session.session));
    } catch {
      // The header keeps what it showed; the next load or event retries.
    }
  }

  /** Shows the pending permission request, if any, unless this browser just decided it. */
  refreshPermission() {
    const request = pendingPermission(this.transcript.messages);
    if (request && !this.decidedPermissions.has(request.id)) {
      // The outcome of what came before no longer holds once the agent asks something new.
      if (this.permissionPanel.request?.id !== request.id) this.setNotice("");
      this.permissionPanel.show(request);
    }
    else if (!this.permissionPanel.submitting) this.permissionPanel.hide();
  }

  renderHeader() {
    const { store, taskId, sessionId, onBack, onChanges } = this.deps;
    const session = store.state.sessions[sessionId];
    const task = store.state.tasks[taskId];
    const error = session?.error ? String(session.error) : "";
    // "agent stopped while idle; it starts again on the next message", and the like.
    const processNote = session?.agent_process === "stopped" && session?.agent_process_note
      ? String(session.agent_process_note) : "";
    this.composer.update(session?.state, !!session);
    this.header.replaceChildren(
      h("button", { type: "button", class: "back", testid: "session-back", onClick: onBack, "aria-label": "Back to task" }, "← Task"),
      h("div", { class: "session-title" },
        h("h2", { text: task?.title ?? "Session" }),
        h("span", { class: "session-name", testid: "session-name",
          text: sessionName(sessionsOfTask(store.state, taskId), sessionId) }),
        h("span", { class: "session-agent", text: String(session?.agent ?? "") }),
        h("span", { class: "badge", testid: "session-state", dataset: { state: String(session?.state ?? "") },
          text: stateWords(session?.state) }),
        // A task in its own worktree: what its agent changed, and the review of it.
        onChanges && hasWorktree(task)
          ? h("button", { type: "button", class: "session-changes", testid: "session-changes", onClick: onChanges }, "Changes")
          : null),
      error ? h("div", { class: "session-error", testid: "session-error", role: "alert", text: error }) : "",
      processNote ? h("div", { class: "session-note", testid: "agent-process-note", text: processNote }) : "",
    );
  }

  /** @param {boolean} forceBottom */
  renderTranscript(forceBottom) {
    this.announce(forceBottom);
    const el = this.list;
    const atBottom = forceBottom || el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    el.replaceChildren(...transcriptItems(this.transcript).map((item) => renderItem(item, this.superseded)));
    if (atBottom) el.scrollTop = el.scrollHeight;
  }

  /**
   * Reads out agent messages that arrived live (not the ones a load brings in).
   * @param {boolean} initial
   */
  announce(initial) {
    const fresh = freshAgentText(this.known, this.transcript.messages);
    if (fresh && !initial) this.announcer.textContent = `Agent: ${fresh}`;
  }

  /**
   * Finds the session's current bundle: the newest candidate whose server state is active.
   * Overlapping refreshes are resolved by generation: only the latest one applies.
   */
  async refreshBundle() {
    const generation = ++this.bundleGeneration;
    const candidates = candidateBundles(this.transcript.messages)
      .filter((id) => !this.finalBundles.has(id) && !this.resolved.has(id));
    /** @type {any} */
    let found = null;
    let failed = false;
    for (const pendingId of candidates.slice(0, MAX_BUNDLE_PROBES)) {
      try {
        const bundle = await this.deps.api.bundle(pendingId);
        if (generation !== this.bundleGeneration) return;
        if (ACTIVE_STATES.has(bundle.state)) { found = bundle; break; }
        if (FINAL_STATES.has(bundle.state)) this.finalBundles.add(pendingId);
        if (bundle.state === "superseded_history" && !this.superseded.has(pendingId)) {
          this.superseded.add(pendingId);
          this.renderTranscript(false);
        }
        // Only the newest non-final bundle can be current; an older one is at most history.
        if (bundle.state === "delivery_claimed") break;
      } catch {
        failed = true;
        break;
      }
    }
    if (generation !== this.bundleGeneration) return;
    // A failed read keeps what is shown; a later event or reload retries.
    if (!found && failed) return;
    this.composer.setOpenQuestion(!!found);
    if (!found) {
      const shown = this.overlay.bundle;
      if (!this.overlay.submitting) this.overlay.reset();
      this.showQuestion.hidden = true;
      // While this page's own answer is in flight, its outcome speaks for it.
      if (shown && !this.overlay.submitting && !this.resolved.has(shown.pending_id)) void this.closedElsewhere(shown);
      return;
    }
    if (this.dismissed.has(found.pending_id)) {
      this.overlay.bundle = found;
      this.renderShowQuestion();
      return;
    }
    this.showQuestion.hidden = true;
    // A new question: the outcome of what came before ("Permission: Allow") is old news.
    if (this.overlay.bundle?.pending_id !== found.pending_id) this.setNotice("");
    // The overlay takes room from the transcript: keep its newest lines in view.
    const list = this.list;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    this.overlay.show(found);
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  /**
   * The question this page showed closed without this page answering it: say so, with the
   * answer that was given, instead of letting it vanish.
   * @param {import("./answer-form.js").Bundle} shown
   */
  async closedElsewhere(shown) {
    this.resolved.add(shown.pending_id);
    forgetDraft(localStorage, shown.pending_id);
    /** @type {any} */
    let bundle = null;
    try {
      bundle = await this.deps.api.bundle(shown.pending_id);
    } catch {
      // The notice still says what happened, without the answer.
    }
    const outcome = elsewhereOutcome(bundle, shown.questions);
    this.setNotice(outcome.text, outcome.winner);
  }

  renderShowQuestion() {
    const pendingId = this.overlay.bundle?.pending_id;
    if (pendingId) this.dismissed.add(pendingId);
    this.showQuestion.hidden = !pendingId;
  }

  restoreQuestion() {
    const bundle = this.overlay.bundle;
    if (!bundle) return;
    this.dismissed.delete(bundle.pending_id);
    this.showQuestion.hidden = true;
    this.overlay.show(bundle);
    if (!this.overlay.root.contains(document.activeElement)) this.overlay.takeFocus();
  }

  /**
   * @param {string} text what happened; an empty text hides the notice
   * @param {string} [winner] the recorded answer that won, shown beside the text
   */
  setNotice(text, winner) {
    this.notice.replaceChildren(h("span", { text }),
      winner ? h("span", { class: "winner", testid: "winning-answer", text: winner }) : "");
    this.notice.hidden = !text;
  }
}

/** Whether a task has a worktree that still exists. @param {Record<string, any> | undefined} task */
function hasWorktree(task) {
  const worktree = task?.worktree;
  return !!worktree && worktree.state !== "removed";
}
