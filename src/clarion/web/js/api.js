// HTTP client for /api/v1: one fetch wrapper that turns the contract's error shape
// `{error: {code, message, retryable, field?, state?, response?}}` into an ApiError, and one
// function per route the UI uses. Imported by main.js and the views.

/** Thrown for every non-2xx answer and for network failures (status 0). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {{code?: string, message?: string, retryable?: boolean, field?: string,
   *   state?: string, response?: any, decision?: any}} error
   */
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.code = error.code ?? `http_${status}`;
    // 4xx are never retryable; an unknown 5xx is assumed retryable only if the server says so.
    this.retryable = error.retryable === true;
    this.field = error.field;
    this.state = error.state;
    this.response = error.response;
    // A permission decision that lost: the one that won (or null).
    this.decision = error.decision;
  }
}

/**
 * Reads an error body into the contract's error object, tolerating non-JSON bodies.
 * @param {number} status
 * @param {string} text
 */
export function parseError(status, text) {
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "object" && body.error) return new ApiError(status, body.error);
    if (body && typeof body.error === "string") return new ApiError(status, { message: body.error });
  } catch {
    // not JSON: fall through
  }
  return new ApiError(status, { message: text.slice(0, 200) || `HTTP ${status}` });
}

/**
 * @param {{fetchImpl?: typeof fetch, base?: string, token?: () => string | null}} [options]
 */
export function createApi(options = {}) {
  const fetchImpl = options.fetchImpl ?? ((...args) => fetch(...args));
  const base = options.base ?? "/api/v1";
  const token = options.token ?? (() => null);

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<any>}
   */
  async function call(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const bearer = token();
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    let res;
    try {
      res = await fetchImpl(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
      });
    } catch (err) {
      throw new ApiError(0, { code: "network", message: String(err), retryable: true });
    }
    const text = await res.text();
    if (!res.ok) throw parseError(res.status, text);
    return text ? JSON.parse(text) : null;
  }

  const enc = encodeURIComponent;
  return {
    call,
    boot: () => call("GET", "/boot"),
    listTasks: () => call("GET", "/tasks"),
    workflowSnapshot: () => call("GET", "/workflow/snapshot"),
    getTask: (/** @type {string} */ id) => call("GET", `/tasks/${enc(id)}`),
    createTask: (/** @type {{title: string, description?: string}} */ body) =>
      call("POST", "/tasks", body),
    moveTask: (/** @type {string} */ id, /** @type {string} */ step) =>
      call("POST", `/tasks/${enc(id)}/move`, { step }),
    changes: (/** @type {string} */ id) => call("GET", `/tasks/${enc(id)}/changes`),
    review: (/** @type {string} */ id,
      /** @type {{comments: {path: string, line?: number, body: string}[], summary?: string}} */ body) =>
      call("POST", `/tasks/${enc(id)}/review`, body),
    listSessions: (/** @type {string} */ taskId) => call("GET", `/tasks/${enc(taskId)}/task-sessions`),
    startSession: (/** @type {string} */ taskId,
      /** @type {{agent: string, prompt?: string, is_primary?: boolean}} */ body) =>
      call("POST", `/tasks/${enc(taskId)}/task-sessions`, body),
    getSession: (/** @type {string} */ id) => call("GET", `/task-sessions/${enc(id)}`),
    agents: () => call("GET", "/agents"),
    prompt: (/** @type {string} */ id, /** @type {string} */ text) =>
      call("POST", `/task-sessions/${enc(id)}/prompt`, { text }),
    cancel: (/** @type {string} */ id) => call("POST", `/task-sessions/${enc(id)}/cancel`, {}),
    finish: (/** @type {string} */ id, /** @type {string} */ state) =>
      call("POST", `/task-sessions/${enc(id)}/finish`, { state }),
    turns: (/** @type {string} */ id) => call("GET", `/task-sessions/${enc(id)}/turns`),
    /** All messages, oldest first, following `next` page by page. */
    async allMessages(/** @type {string} */ id) {
      /** @type {any[]} */
      const all = [];
      let after = null;
      for (let page = 0; page < 200; page += 1) {
        const q = after ? `?after=${enc(after)}&limit=500` : "?limit=500";
        const body = await call("GET", `/task-sessions/${enc(id)}/messages${q}`);
        all.push(...(body.messages ?? []));
        if (!body.next || body.next === after) break;
        after = body.next;
      }
      return all;
    },
    inbox: () => call("GET", "/inbox"),
    bundle: (/** @type {string} */ pendingId) => call("GET", `/clarification/${enc(pendingId)}`),
    respond: (/** @type {string} */ pendingId, /** @type {unknown} */ body) =>
      call("POST", `/clarification/${enc(pendingId)}/respond`, body),
    resend: (/** @type {string} */ pendingId) =>
      call("POST", `/clarification/${enc(pendingId)}/resend`, {}),
    permission: (/** @type {string} */ messageId) => call("GET", `/permission/${enc(messageId)}`),
    decidePermission: (/** @type {string} */ messageId, /** @type {unknown} */ body) =>
      call("POST", `/permission/${enc(messageId)}/respond`, body),
  };
}

/** @typedef {ReturnType<typeof createApi>} Api */
