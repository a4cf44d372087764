// Timestamps in words: a short time for today, the date for older ones, the full date and time
// for a hover title, and an age ("5 min ago") for the inbox. Pure; imported by the views.

/** @param {string | null | undefined} iso */
function parse(iso) {
  if (!iso) return null;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : d;
}

/**
 * "10:42" today, "3 Dec, 10:42" on another day of this year, "3 Dec 2025, 10:42" before.
 * @param {string | null | undefined} iso
 * @param {Date} [now]
 */
export function stamp(iso, now = new Date()) {
  const d = parse(iso);
  if (!d) return "";
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  const date = d.toLocaleDateString([], d.getFullYear() === now.getFullYear()
    ? { day: "numeric", month: "short" } : { day: "numeric", month: "short", year: "numeric" });
  return `${date}, ${time}`;
}

/**
 * The full local date and time with seconds, for a `title` on hover.
 * @param {string | null | undefined} iso
 */
export function fullStamp(iso) {
  const d = parse(iso);
  return d ? d.toLocaleString([], { dateStyle: "full", timeStyle: "medium" }) : "";
}

/**
 * How long ago: "just now", "5 min ago", "3 h ago", "2 d ago".
 * @param {string | null | undefined} iso
 * @param {Date} [now]
 */
export function age(iso, now = new Date()) {
  const d = parse(iso);
  if (!d) return "";
  const minutes = Math.floor((now.getTime() - d.getTime()) / 60000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} d ago`;
}
