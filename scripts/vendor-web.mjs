// Copies the web UI's third-party files from node_modules (installed by `npm ci` from
// package-lock.json) into src/clarion/web/vendor, where the server serves them under /static.
// The copies are committed, so `make run` on a fresh machine needs no Node; after changing a
// version in package.json, run `npm install && npm run vendor` and commit both.
// tests/web/test_vendored_files.py fails while the copies differ from the locked packages.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const vendor = join(root, "src", "clarion", "web", "vendor");

/** [package, file in the package, name in vendor/<package>/] */
export const FILES = [
  ["diff2html", "bundles/js/diff2html-ui-slim.min.js", "diff2html-ui-slim.min.js"],
  ["diff2html", "bundles/css/diff2html.min.css", "diff2html.min.css"],
  ["diff2html", "LICENSE.md", "LICENSE.md"],
  ["highlight.js", "styles/github.min.css", "github.min.css"],
  ["highlight.js", "styles/github-dark.min.css", "github-dark.min.css"],
  ["highlight.js", "LICENSE", "LICENSE"],
];

const versions = {};
for (const [pkg, from, to] of FILES) {
  const source = join(root, "node_modules", pkg);
  versions[pkg] = JSON.parse(readFileSync(join(source, "package.json"), "utf8")).version;
  mkdirSync(join(vendor, pkg), { recursive: true });
  copyFileSync(join(source, from), join(vendor, pkg, to));
}
writeFileSync(join(vendor, "VERSIONS.json"), JSON.stringify(versions, null, 2) + "\n");
console.log(`vendored ${FILES.length} files: ${JSON.stringify(versions)}`);
