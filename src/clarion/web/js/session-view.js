// The session view: transcript (turn boundaries, prompts, agent messages, thoughts, tool calls,
// questions), the clarification overlay for the session's current bundle, a prompt box, and
// Cancel / Finish. Live through notifications main.js forwards. Imported by main.js.

import { h, shortTime } from "./dom.js";
import { ClarificationOverlay } from "./overlay.js";
import { PermissionPanel } from "./permission-panel.js";
import { applySessionRow } from "./store.js";
import {
  applyTranscriptEvent,
  candidateBundles,
  emptyTranscript,
  pendingPermission,
  splitError,
  transcriptItems,
} from "./transcript.js";

/** @typedef {import("./api.js").Api} Api */
/** @typedef {import("./store.js").ClientStore} ClientStore */
/** @typedef {import("./transcript.js").Message} Message */
/** @typedef {import("./transcript.js").TranscriptItem} TranscriptItem */

const ACTIVE_STATES = new Set(["active_live", "active_detached"]);
const FINAL_STATES = new Set(["terminal", "superseded_history"]);
/** How many candidate bundles, newest first, are asked about before concluding none is active. */
const MAX_BUNDLE_PROBES = 3;

/** @param {TranscriptItem} item */
function renderItem(item) {
  if (item.kind !== "message") {
    const t = item.turn;
    const lifecycle = t.metadata?.lifecycle_only === true;
    // A lifecycle turn records an agent start, or (with `phase`) an agent that failed.
    const failed = lifecycle && typeof t.metadata?.phase === "string";
    const text = item.kind === "turn-start"
      ? (failed ? "Agent failed" : lifecycle ? "Agent started" : "Turn started")
      : (t.metadata?.interrupted ? "Turn interrupted" : "Turn completed");
    const time = shortTime(item.kind === "turn-start" ? t.started_at : t.completed_at);
    return h("div", { class: `turn-boundary ${item.kind}${lifecycle ? " lifecycle" : ""}`,
      testid: `${item.kind}-${t.id}` }, `${text}${time ? ` · ${time}` : ""}`);
  }
  const m = item.message;
  const type = String(m.type ?? "message");
  const author = String(m.author_type ?? "agent");
  const attrs = { class: `msg msg-${type} author-${author}`, testid: `message-${m.id}`,
    dataset: { type, author } };
  const content = String(m.content ?? "");
  if (type === "thought") {
    return h("details", attrs, h("summary", {}, "Thought"), h("div", { class: "content", text: content }));
  }
  if (type === "tool_call") {
    const title = m.metadata?.title ?? m.metadata?.tool_name ?? "Tool call";
    // The built-in agent's tool call content is often just the tool name again.
    return h("div", attrs, h("span", { class: "tool-title", text: String(title) }),
      content && content !== String(title) ? h("pre", { class: "content", text: content }) : null);
  }
  if (type === "error") {
    // An agent failure: the reason always visible, the agent's stderr one click away.
    const { reason, detail } = splitError(content);
    return h("div", { ...attrs, role: "alert" },
      h("strong", { class: "error-reason", testid: "error-reason", text: reason }),
      detail ? h("details", {}, h("summary", {}, "Agent output"),
        h("pre", { class: "content", testid: "error-detail", text: detail })) : null);
  }
  if (type === "permission_request") {
    const status = String(m.metadata?.status || "pending");
    const decision = m.metadata?.decision;
    const kind = String(m.metadata?.tool_call?.kind ?? "");
    return h("div", { ...attrs, dataset: { ...attrs.dataset, status } },
      h("span", { class: "badge", testid: "permission-status", text: status }),
      h("span", { class: "content", text: `Permission: ${content}${kind ? ` (${kind})` : ""}` }),
      decision?.option_id
        ? h("span", { class: "decision", text: `${decision.option_id}${decision.decided_by ? ` · ${decision.decided_by}` : ""}` })
        : null);
  }
  if (type === "clarification_request") {
    const status = String(m.metadata?.status || "pending");
    return h("div", { ...attrs, dataset: { ...attrs.dataset, status } },
      h("span", { class: "badge", testid: "question-status", text: status }),
      h("span", { class: "content", text: content }),
      ambiguousDelivery(m));
  }
  return h("div", attrs, h("div", { class: "content", text: content }));
}

/**
 * The warning and "Send it again" button under the first question of a bundle whose answer a
 * server restart left possibly undelivered (`delivery: "ambiguous"`); null otherwise.
 * @param {Message} m
 */
function ambiguousDelivery(m) {
  const meta = m.metadata ?? {};
  const index = Number(meta.question_index ?? 0);
  if (meta.delivery !== "ambiguous" || index > 0 || typeof meta.pending_id !== "string") return null;
  const sending = meta.resend_pending === true;
  return h("div", { class: "delivery-ambiguous", role: "note", testid: "delivery-ambiguous" },
    h("span", { text: "The server restarted while handing this answer to the agent: " +
      "the agent may not have received it." }),
    h("button", { type: "button", testid: "resend-answer", disabled: sending,
      dataset: { resend: meta.pending_id } }, sending ? "Sending again…" : "Send it again"));
}

export class SessionView {
  /**
   * @param {{api: Api, store: ClientStore, taskId: string, sessionId: string, onBack: () => void}} deps
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
    this.lastPending = /** @type {string | null | undefined} */ (undefined);
    this.overlay = new ClarificationOverlay({
      api: deps.api,
      onDismiss: () => this.renderShowQuestion(),
      onClosed: (pendingId, outcome) => {
        this.resolved.add(pendingId);
        this.setNotice(outcome.text, outcome.winner);
        void this.refreshBundle();
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
    this.list = h("div", { class: "transcript", testid: "transcript", "aria-live": "polite" });
    this.list.addEventListener("click", (event) => {
      const target = /** @type {Element} */ (event.target);
      const button = /** @type {HTMLButtonElement | null} */ (target.closest("[data-resend]"));
      if (button?.dataset.resend) void this.resend(button.dataset.resend, button);
    });
    this.showQuestion = h("button", { type: "button", class: "show-question", testid: "show-question", hidden: true,
      onClick: () => this.restoreQuestion() }, "Show question");
    this.notice = h("div", { class: "notice", testid: "clarification-notice", role: "status", hidden: true });
    this.input = /** @type {HTMLTextAreaElement} */ (h("textarea", { rows: "2", testid: "prompt-input",
      placeholder: "Message the agent (Enter to send, Shift+Enter for a new line)", "aria-label": "Prompt" }));
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); void this.sendPrompt(); }
    });
    this.sendButton = /** @type {HTMLButtonElement} */ (h("button", { type: "button", class: "primary", testid: "prompt-send",
      onClick: () => void this.sendPrompt() }, "Send"));
    this.promptStatus = h("span", { class: "prompt-status", testid: "prompt-status", role: "status" });
    this.root = h("div", { class: "session-view", testid: "session-view", dataset: { sessionId: deps.sessionId } },
      this.header, this.list, this.notice, this.showQuestion, this.permissionPanel.root, this.overlay.root,
      h("div", { class: "prompt-box" }, this.input, this.sendButton),
      h("div", { class: "session-actions" }, this.promptStatus, h("span", { class: "spacer" }),
        h("button", { type: "button", testid: "session-cancel", onClick: () => void this.act("cancel") }, "Cancel turn"),
        h("button", { type: "button", testid: "session-finish", onClick: () => void this.act("finish") }, "Finish")));
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
      this.setNotice(`Could not load this session: ${/** @type {Error} */ (err).message}`);
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
    if (payload.type === "error" && action === "session.message.added") void this.reloadSession();
    if (payload.type === "clarification_request" || action === "session.turn.started" ||
        action === "session.turn.completed") {
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

  /** The session row again (its `error` field is not carried by state events). */
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
    if (request && !this.decidedPermissions.has(request.id)) this.permissionPanel.show(request);
    else if (!this.permissionPanel.submitting) this.permissionPanel.hide();
  }

  renderHeader() {
    const { store, taskId, sessionId, onBack } = this.deps;
    const session = store.state.sessions[sessionId];
    const task = store.state.tasks[taskId];
    const error = session?.error ? String(session.error) : "";
    this.header.replaceChildren(
      h("button", { type: "button", class: "back", testid: "session-back", onClick: onBack, "aria-label": "Back to task" }, "← Task"),
      h("div", { class: "session-title" },
        h("h2", { text: task?.title ?? "Session" }),
        h("span", { class: "session-agent", text: String(session?.agent ?? "") }),
        h("span", { class: "badge", testid: "session-state", text: String(session?.state ?? "") })),
      error ? h("div", { class: "session-error", testid: "session-error", role: "alert", text: error }) : "",
    );
  }

  /** @param {boolean} forceBottom */
  renderTranscript(forceBottom) {
    const el = this.list;
    const atBottom = forceBottom || el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    el.replaceChildren(...transcriptItems(this.transcript).map(renderItem));
    if (atBottom) el.scrollTop = el.scrollHeight;
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
    if (!found) {
      if (!this.overlay.submitting) this.overlay.reset();
      this.showQuestion.hidden = true;
      return;
    }
    if (this.dismissed.has(found.pending_id)) {
      this.overlay.bundle = found;
      this.renderShowQuestion();
      return;
    }
    this.showQuestion.hidden = true;
    // The overlay takes room from the transcript: keep its newest lines in view.
    const list = this.list;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    this.overlay.show(found);
    if (atBottom) list.scrollTop = list.scrollHeight;
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
    this.overlay.root.focus();
  }

  /**
   * @param {string} text
   * @param {string} [winner]
   */
  /**
   * Sends an ambiguous answer again (the person's explicit decision; the server allows it once).
   * @param {string} pendingId
   * @param {HTMLButtonElement} button
   */
  async resend(pendingId, button) {
    button.disabled = true;
    try {
      await this.deps.api.resend(pendingId);
      this.setNotice("Answer sent to the agent again.");
    } catch (err) {
      button.disabled = false;
      this.setNotice(`Could not send the answer again: ${/** @type {Error} */ (err).message}`);
    }
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

  async sendPrompt() {
    const text = this.input.value;
    if (!text.trim()) return;
    this.sendButton.disabled = true;
    try {
      const res = await this.deps.api.prompt(this.deps.sessionId, text);
      this.input.value = "";
      this.promptStatus.textContent = res?.queued ? "Queued: it will run when the current turn ends." : "Sent.";
      this.promptStatus.dataset.queued = res?.queued ? "true" : "false";
    } catch (err) {
      this.promptStatus.textContent = `Not sent: ${/** @type {Error} */ (err).message}`;
      this.promptStatus.dataset.queued = "false";
    } finally {
      this.sendButton.disabled = false;
    }
  }

  /** @param {"cancel" | "finish"} what */
  async act(what) {
    const { api, sessionId } = this.deps;
    try {
      if (what === "cancel") await api.cancel(sessionId);
      else await api.finish(sessionId, "completed");
      this.promptStatus.textContent = what === "cancel" ? "Cancel requested." : "Session finished.";
    } catch (err) {
      this.promptStatus.textContent = `${what === "cancel" ? "Cancel" : "Finish"} failed: ${/** @type {Error} */ (err).message}`;
    }
  }
}
