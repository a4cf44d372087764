// The pending permission request, the readable tool input, decisions and error rows.
import { test } from "node:test";
import assert from "node:assert/strict";

import { describeDecision, readableInput } from "../../src/clarion/web/js/permission-panel.js";
import { pendingPermission, splitError } from "../../src/clarion/web/js/transcript.js";

const perm = (id, created_at, status, extra = {}) => ({ id, session_id: "s1", turn_id: "t1", created_at,
  type: "permission_request", author_type: "agent", content: "Edit README.md", metadata: { status }, ...extra });

test("the newest permission request is shown only while it is pending", () => {
  const older = perm("p1", "2026-01-01T00:00", "pending");
  const newer = perm("p2", "2026-01-01T00:01", "approved");
  assert.equal(pendingPermission([older, newer]), null, "an older pending request is history");
  const waiting = perm("p3", "2026-01-01T00:02", "pending");
  assert.equal(pendingPermission([waiting, older, newer])?.id, "p3");
  assert.equal(pendingPermission([{ id: "m", type: "message", created_at: "2026-01-02" }]), null);
});

test("tool input is readable and bounded", () => {
  assert.equal(readableInput(undefined), "");
  assert.equal(readableInput("rm -rf build"), "rm -rf build");
  assert.equal(readableInput({ path: "README.md" }), '{\n  "path": "README.md"\n}');
  const long = readableInput("x".repeat(50), 10);
  assert.ok(long.startsWith("xxxxxxxxxx\n…"));
  assert.ok(long.includes("40 more characters"));
});

test("a decision is described with the option's name and who decided", () => {
  const options = [{ option_id: "allow", name: "Allow", kind: "allow_once" }];
  assert.equal(describeDecision({ option_id: "allow", decided_by: "user" }, options, "approved"),
    "Allow (approved) by user");
  assert.equal(describeDecision(null, options, "cancelled"), "Request cancelled.");
  assert.equal(describeDecision(null, options, "pending"), "");
});

test("an error row splits into its reason and the agent's output", () => {
  assert.deepEqual(splitError("Agent 'x' exited."), { reason: "Agent 'x' exited.", detail: "" });
  assert.deepEqual(splitError("It failed.\n\nAgent stderr:\nno key"),
    { reason: "It failed.", detail: "Agent stderr:\nno key" });
});
