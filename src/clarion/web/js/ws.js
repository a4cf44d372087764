// Live connection to /api/v1/ws: parses envelopes, hands notifications to a callback, and
// reconnects with capped exponential backoff that starts short (a restarting server is back
// within a second or two) and stays short (4 s at most), and at once on `retryNow()`. After a reconnect the caller re-loads its
// snapshots (notifications missed while disconnected are not replayed). Imported by main.js;
// the socket constructor and timers are injectable so the tests drive it without a network.

/**
 * Delay before reconnect attempt `attempt` (0-based): doubling from `base`, capped at `max`,
 * with up to 25% random jitter so many tabs do not reconnect in lockstep.
 * @param {number} attempt
 * @param {{base?: number, max?: number, random?: () => number}} [options]
 */
export function backoffDelay(attempt, options = {}) {
  const base = options.base ?? 250;
  const max = options.max ?? 4000;
  const random = options.random ?? Math.random;
  const raw = Math.min(max, base * 2 ** Math.min(attempt, 20));
  return Math.round(raw * (1 - 0.25 * random()));
}

/**
 * @param {string} data raw frame text
 * @returns {{type: string, action: string, payload: any, id?: string} | null}
 */
export function parseEnvelope(data) {
  try {
    const env = JSON.parse(data);
    if (env && typeof env.type === "string" && typeof env.action === "string") return env;
  } catch {
    // ignore malformed frames
  }
  return null;
}

/**
 * @typedef {{url: string,
 *   onNotification: (action: string, payload: any) => void,
 *   onStatus?: (status: "connecting" | "open" | "closed") => void,
 *   onReconnect?: () => void,
 *   createSocket?: (url: string) => WebSocket,
 *   setTimer?: (fn: () => void, ms: number) => unknown,
 *   clearTimer?: (handle: unknown) => void,
 *   backoff?: (attempt: number) => number}} LiveOptions
 */

/** A self-healing WebSocket feed. */
export class LiveConnection {
  /** @param {LiveOptions} options */
  constructor(options) {
    this.options = options;
    this.attempt = 0;
    this.everOpened = false;
    this.stopped = false;
    /** @type {WebSocket | null} */
    this.socket = null;
    /** @type {unknown} */
    this.timer = null;
    /** Set by retryNow while an attempt is in flight: if it fails, try again at once. */
    this.retrySoon = false;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.timer !== null) (this.options.clearTimer ?? clearTimeout)(/** @type {any} */ (this.timer));
    this.timer = null;
    this.socket?.close();
  }

  /**
   * Reconnects now (the Retry button, the browser coming back online); no-op while connected.
   * While an attempt is still connecting, its failure retries at once instead of backing off.
   */
  retryNow() {
    if (this.stopped) return;
    if (this.socket) {
      this.retrySoon = true;
      return;
    }
    if (this.timer !== null) (this.options.clearTimer ?? clearTimeout)(/** @type {any} */ (this.timer));
    this.timer = null;
    this.attempt = 0;
    this.connect();
  }

  /** @private */
  connect() {
    const o = this.options;
    o.onStatus?.("connecting");
    const socket = (o.createSocket ?? ((url) => new WebSocket(url)))(o.url);
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.retrySoon = false;
      o.onStatus?.("open");
      if (this.everOpened) o.onReconnect?.();
      this.everOpened = true;
    };
    socket.onmessage = (event) => {
      const env = parseEnvelope(String(event.data));
      if (env && env.type === "notification") o.onNotification(env.action, env.payload);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      o.onStatus?.("closed");
      if (this.stopped) return;
      const delay = this.retrySoon ? 0 : (o.backoff ?? backoffDelay)(this.attempt);
      this.retrySoon = false;
      this.attempt += 1;
      this.timer = (o.setTimer ?? setTimeout)(() => {
        this.timer = null;
        if (!this.stopped) this.connect();
      }, delay);
    };
    socket.onerror = () => {
      // onclose follows and schedules the retry
    };
  }
}

/**
 * The WebSocket URL for this page (ws: or wss: to match http: or https:).
 * @param {{protocol: string, host: string}} location
 * @param {string | null} token optional bearer token, sent as a query parameter because browsers
 *   cannot set headers on a WebSocket handshake
 */
export function wsUrl(location, token) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const query = token ? `?token=${encodeURIComponent(token)}` : "";
  return `${scheme}//${location.host}/api/v1/ws${query}`;
}
