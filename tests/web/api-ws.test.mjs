// The fetch wrapper's error reading and the WebSocket feed's reconnect behaviour.
import { test } from "node:test";
import assert from "node:assert/strict";

import { ApiError, createApi, parseError } from "../../src/clarion/web/js/api.js";
import { LiveConnection, backoffDelay, parseEnvelope, wsUrl } from "../../src/clarion/web/js/ws.js";

function fakeFetch(status, body) {
  const calls = [];
  const impl = async (url, init) => {
    calls.push({ url, init });
    return { ok: status >= 200 && status < 300, status, text: async () => (typeof body === "string" ? body : JSON.stringify(body)) };
  };
  return { impl, calls };
}

test("the contract's error shape becomes an ApiError with its extra keys", async () => {
  const { impl } = fakeFetch(409, { error: { code: "not_active", message: "gone", retryable: false,
    state: "terminal", response: { rejected: true } } });
  const api = createApi({ fetchImpl: impl });
  await assert.rejects(api.respond("p1", { rejected: true }), (err) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 409);
    assert.equal(err.code, "not_active");
    assert.equal(err.state, "terminal");
    assert.deepEqual(err.response, { rejected: true });
    assert.equal(err.retryable, false);
    return true;
  });
});

test("a retryable server error keeps its retryable flag", () => {
  const err = parseError(500, JSON.stringify({ error: { code: "resume_not_accepted", message: "m", retryable: true } }));
  assert.equal(err.retryable, true);
  assert.equal(err.code, "resume_not_accepted");
});

test("a non-JSON error body still yields an ApiError", () => {
  const err = parseError(502, "<html>bad gateway</html>");
  assert.equal(err.status, 502);
  assert.equal(err.retryable, false);
});

test("requests send JSON and the bearer token when one is set", async () => {
  const { impl, calls } = fakeFetch(202, { queued: true });
  const api = createApi({ fetchImpl: impl, token: () => "tok" });
  assert.deepEqual(await api.prompt("s 1", "hi"), { queued: true });
  assert.equal(calls[0].url, "/api/v1/task-sessions/s%201/prompt");
  assert.equal(calls[0].init.method, "POST");
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
  assert.equal(calls[0].init.body, JSON.stringify({ text: "hi" }));
});

test("a network failure is a retryable ApiError with status 0", async () => {
  const api = createApi({ fetchImpl: async () => { throw new TypeError("offline"); } });
  await assert.rejects(api.boot(), (err) => err instanceof ApiError && err.status === 0 && err.retryable);
});

test("allMessages follows next until it is null", async () => {
  const pages = [{ messages: [{ id: "a" }], next: "a" }, { messages: [{ id: "b" }], next: null }];
  const urls = [];
  const api = createApi({ fetchImpl: async (url) => { urls.push(url); const body = pages.shift();
    return { ok: true, status: 200, text: async () => JSON.stringify(body) }; } });
  assert.deepEqual((await api.allMessages("s1")).map((m) => m.id), ["a", "b"]);
  assert.match(urls[1], /after=a/);
});

test("backoff starts short, doubles and is capped at four seconds", () => {
  const none = { random: () => 0 };
  assert.equal(backoffDelay(0, none), 250);
  assert.equal(backoffDelay(3, none), 2000);
  assert.equal(backoffDelay(30, none), 4000);
  assert.equal(backoffDelay(30, { random: () => 1 }), 3000);
});

test("retryNow reconnects at once instead of waiting for the timer", () => {
  /** @type {any[]} */
  const sockets = [];
  let cleared = 0;
  const live = new LiveConnection({
    url: "ws://x", onNotification: () => {},
    createSocket: () => { const s = /** @type {any} */ ({ close() {} }); sockets.push(s); return s; },
    setTimer: () => "t", clearTimer: () => { cleared += 1; },
  });
  live.start();
  sockets[0].onclose();
  assert.equal(sockets.length, 1);
  live.retryNow();
  assert.equal(sockets.length, 2);
  assert.equal(cleared, 1);
  live.retryNow(); // connecting already: no second socket, but its failure retries at once
  assert.equal(sockets.length, 2);
  /** @type {number[]} */
  const delays = [];
  live.options.setTimer = (fn, ms) => { delays.push(ms); fn(); return "t"; };
  sockets[1].onclose();
  assert.deepEqual(delays, [0]);
  assert.equal(sockets.length, 3);
});

test("only well-formed envelopes are parsed", () => {
  assert.equal(parseEnvelope("nope"), null);
  assert.equal(parseEnvelope(JSON.stringify({ type: "notification" })), null);
  assert.equal(parseEnvelope(JSON.stringify({ type: "notification", action: "a", payload: 1 })).action, "a");
});

test("the socket URL follows the page scheme and carries the token", () => {
  assert.equal(wsUrl({ protocol: "https:", host: "h:1" }, null), "wss://h:1/api/v1/ws");
  assert.equal(wsUrl({ protocol: "http:", host: "h" }, "a b"), "ws://h/api/v1/ws?token=a%20b");
});

test("the live connection delivers notifications, reconnects with backoff and asks for a reload", () => {
  const sockets = [];
  const timers = [];
  const seen = [];
  let reloads = 0;
  const conn = new LiveConnection({
    url: "ws://x/api/v1/ws",
    createSocket: () => { const s = { close() { this.onclose?.(); } }; sockets.push(s); return s; },
    setTimer: (fn, ms) => { timers.push({ fn, ms }); return timers.length; },
    clearTimer: () => {},
    backoff: (attempt) => 100 * (attempt + 1),
    onNotification: (action, payload) => seen.push([action, payload]),
    onReconnect: () => { reloads += 1; },
  });
  conn.start();
  sockets[0].onopen();
  sockets[0].onmessage({ data: JSON.stringify({ type: "notification", action: "task.status_summary.updated", payload: { task_id: "t" } }) });
  sockets[0].onmessage({ data: JSON.stringify({ type: "response", action: "subscribe", payload: {} }) });
  assert.deepEqual(seen, [["task.status_summary.updated", { task_id: "t" }]]);
  assert.equal(reloads, 0, "the first open is not a reconnect");

  sockets[0].onclose();
  assert.equal(timers[0].ms, 100);
  timers[0].fn();
  sockets[1].onclose(); // the retry fails too: the next delay grows
  assert.equal(timers[1].ms, 200);
  timers[1].fn();
  sockets[2].onopen();
  assert.equal(reloads, 1);

  conn.stop();
  assert.equal(timers.length, 2, "no retry after stop");
});
