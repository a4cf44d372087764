// What a permission request would do, in a person's terms: the change to a file as a diff
// (an edit's old and new text, or a write's new content), the command line of an execute, the
// address of a fetch; anything else as indented JSON. And what each of the agent's options
// means, "Always allow" included. Pure; imported by permission-panel.js and the tests.

/**
 * @typedef {{sign: "+" | "-" | " ", text: string}} DiffLine
 * @typedef {{type: "diff", path: string, lines: DiffLine[], note: string}
 *   | {type: "command", command: string, cwd: string}
 *   | {type: "fetch", url: string}
 *   | {type: "raw", text: string}
 *   | {type: "none"}} Preview
 */

/** Beyond this many lines on a side, a diff shows every old line removed and every new added. */
const DIFF_LINE_LIMIT = 400;

/**
 * @param {Record<string, any>} input
 * @param {string[]} names
 * @returns {string | undefined}
 */
function field(input, names) {
  for (const n of names) if (typeof input[n] === "string") return input[n];
  return undefined;
}

/** @param {string} text */
const linesOf = (text) => (text === "" ? [] : text.replace(/\n$/, "").split("\n"));

/**
 * A line diff (longest common subsequence), removals before additions at each change.
 * @param {string} before
 * @param {string} after
 * @returns {DiffLine[]}
 */
export function lineDiff(before, after) {
  const a = linesOf(before), b = linesOf(after);
  if (a.length > DIFF_LINE_LIMIT || b.length > DIFF_LINE_LIMIT) {
    return [...a.map((text) => ({ sign: /** @type {"-"} */ ("-"), text })), ...b.map((text) => ({ sign: /** @type {"+"} */ ("+"), text }))];
  }
  // lcs[i][j]: the common length of a[i..] and b[j..]
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  /** @type {DiffLine[]} */
  const out = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { out.push({ sign: " ", text: a[i] }); i++; j++; }
    else if (j >= b.length || (i < a.length && lcs[i + 1][j] >= lcs[i][j + 1])) out.push({ sign: "-", text: a[i++] });
    else out.push({ sign: "+", text: b[j++] });
  }
  return out;
}

/**
 * The preview of a tool call (`metadata.tool_call`: kind, raw_input, and ACP `content` items).
 * @param {Record<string, any>} tool
 * @returns {Preview}
 */
export function previewOf(tool) {
  const raw = tool?.raw_input;
  const diff = Array.isArray(tool?.content) ? tool.content.find((/** @type {any} */ c) => c?.type === "diff") : null;
  if (diff && typeof diff.newText === "string") {
    return { type: "diff", path: String(diff.path ?? ""), lines: lineDiff(String(diff.oldText ?? ""), diff.newText), note: "" };
  }
  if (raw === undefined || raw === null) return { type: "none" };
  // A raw input too large to store arrives as a cut string.
  if (typeof raw !== "object" || Array.isArray(raw)) return { type: "raw", text: typeof raw === "string" ? raw : JSON.stringify(raw, null, 2) };
  const path = field(raw, ["path", "file_path", "filePath", "file"]) ?? "";
  const before = field(raw, ["old_string", "oldText", "old_text", "old_str"]);
  const after = field(raw, ["new_string", "newText", "new_text", "new_str"]);
  if (after !== undefined) return { type: "diff", path, lines: lineDiff(before ?? "", after), note: "" };
  const content = field(raw, ["content", "contents", "text"]);
  if (content !== undefined && path) {
    return { type: "diff", path, lines: lineDiff("", content), note: "The file's new content:" };
  }
  const command = raw.command ?? raw.cmd;
  if (typeof command === "string" || Array.isArray(command)) {
    const line = Array.isArray(command) ? command.map((part) => (/[\s"']/.test(String(part)) ? JSON.stringify(String(part)) : String(part))).join(" ") : command;
    return { type: "command", command: line, cwd: field(raw, ["cwd", "workdir", "working_directory"]) ?? "" };
  }
  const url = field(raw, ["url", "uri"]);
  if (url !== undefined) return { type: "fetch", url };
  return { type: "raw", text: JSON.stringify(raw, null, 2) };
}

/**
 * What choosing an option means, by its ACP kind (the tool's kind names what it would do).
 * @param {string} kind option kind: allow_once, allow_always, reject_once, reject_always
 * @param {string} toolKind the tool call's kind (edit, execute, …)
 */
export function optionMeaning(kind, toolKind) {
  const what = toolKind && toolKind !== "other" ? `${toolKind} calls` : "calls of this kind";
  switch (kind) {
    case "allow_once": return "Allow this one call; the agent asks again next time.";
    case "allow_always": return `Allow this call; the agent stops asking about ${what} like it in this session.`;
    case "reject_once": return "Refuse this call; the agent may ask again.";
    case "reject_always": return `Refuse this call; the agent stops trying ${what} like it in this session.`;
    default: return "";
  }
}
