// Pending-action revisions: `{epoch: "<decimal string>", sequence: <int>}`.
// The epoch is a database-allocated backend generation that only grows, so it is compared as a
// BigInt (a decimal string may exceed Number's safe range); the sequence orders reads inside one
// epoch. Pure module, imported by store.js and the tests.

/** @typedef {{epoch: string, sequence: number}} Revision */

/**
 * Parses an epoch (decimal string, or a number from a lenient server) into a BigInt.
 * @param {unknown} epoch
 * @returns {bigint | null} null when the value is not a non-negative decimal integer
 */
export function parseEpoch(epoch) {
  if (typeof epoch === "bigint") return epoch;
  if (typeof epoch === "number" && Number.isInteger(epoch) && epoch >= 0) return BigInt(epoch);
  if (typeof epoch === "string" && /^[0-9]+$/.test(epoch)) return BigInt(epoch);
  return null;
}

/**
 * @param {unknown} value
 * @returns {value is Revision} true when the value is a well-formed revision
 */
export function isRevision(value) {
  if (!value || typeof value !== "object") return false;
  const r = /** @type {Record<string, unknown>} */ (value);
  return parseEpoch(r.epoch) !== null && typeof r.sequence === "number" && r.sequence >= 0;
}

/**
 * Orders two revisions: epoch numerically first, then sequence.
 * @param {Revision} a
 * @param {Revision} b
 * @returns {-1 | 0 | 1}
 */
export function compareRevisions(a, b) {
  const ea = /** @type {bigint} */ (parseEpoch(a.epoch));
  const eb = /** @type {bigint} */ (parseEpoch(b.epoch));
  if (ea !== eb) return ea < eb ? -1 : 1;
  if (a.sequence !== b.sequence) return a.sequence < b.sequence ? -1 : 1;
  return 0;
}

/**
 * The larger of two epochs, either possibly absent.
 * @param {string | null} a decimal string or null
 * @param {unknown} b any epoch value
 * @returns {string | null}
 */
export function maxEpoch(a, b) {
  const pb = parseEpoch(b);
  if (pb === null) return a;
  const pa = a === null ? null : parseEpoch(a);
  if (pa === null || pb > pa) return pb.toString();
  return a;
}
