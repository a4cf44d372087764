// Errors in words a person reads: a failed fetch (no connection) says so instead of the
// browser's "TypeError: Failed to fetch"; a server error gives its message. Imported by the views.

/** What the page says when the server cannot be reached. */
export const UNREACHABLE = "Cannot reach the Clarion server (offline or restarting); it retries by itself.";

/**
 * @param {unknown} err an ApiError (status 0 for a network failure) or anything thrown
 * @returns {string}
 */
export function humanError(err) {
  const e = /** @type {any} */ (err);
  if (!e) return "Something went wrong.";
  if (e.status === 0 || e.code === "network" || e instanceof TypeError) return UNREACHABLE;
  const message = typeof e.message === "string" && e.message ? e.message : String(e);
  return message.replace(/^(Type|Api)Error:\s*/, "");
}
