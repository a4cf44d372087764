"""The diff renderer the Changes view loads is served from src/clarion/web/vendor, copied there
from the packages package-lock.json pins (`npm run vendor`): the copies must be those packages'
files, byte for byte, and nothing in the UI may load a script or style from another site."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "src" / "clarion" / "web" / "vendor"
# (package, file in the package, file under vendor/<package>/), as scripts/vendor-web.mjs copies
FILES = [
    ("diff2html", "bundles/js/diff2html-ui-slim.min.js", "diff2html-ui-slim.min.js"),
    ("diff2html", "bundles/css/diff2html.min.css", "diff2html.min.css"),
    ("diff2html", "LICENSE.md", "LICENSE.md"),
    ("highlight.js", "styles/github.min.css", "github.min.css"),
    ("highlight.js", "styles/github-dark.min.css", "github-dark.min.css"),
    ("highlight.js", "LICENSE", "LICENSE"),
]


def locked_version(package: str) -> str:
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    return str(lock["packages"][f"node_modules/{package}"]["version"])


def test_the_vendored_versions_are_the_locked_ones() -> None:
    vendored = json.loads((VENDOR / "VERSIONS.json").read_text(encoding="utf-8"))
    assert vendored == {package: locked_version(package) for package, _, _ in FILES}


def test_the_script_copies_exactly_the_files_this_test_checks() -> None:
    script = (ROOT / "scripts" / "vendor-web.mjs").read_text(encoding="utf-8")
    listed = re.findall(r'\["([^"]+)", "([^"]+)", "([^"]+)"\]', script)
    assert listed == FILES


@pytest.mark.parametrize(("package", "source", "name"), FILES)
def test_a_vendored_file_is_the_installed_packages_own(
    package: str, source: str, name: str
) -> None:
    installed = ROOT / "node_modules" / package
    if not installed.is_dir():
        pytest.skip(f"node_modules/{package} is not installed (npm ci)")
    version = json.loads((installed / "package.json").read_text(encoding="utf-8"))["version"]
    assert version == locked_version(package), "node_modules is not what package-lock.json pins"
    assert (VENDOR / package / name).read_bytes() == (installed / source).read_bytes(), (
        f"vendor/{package}/{name} differs from the locked package: run `npm run vendor`"
    )


def test_the_ui_loads_nothing_from_another_site() -> None:
    web = ROOT / "src" / "clarion" / "web"
    for path in [*web.glob("*.html"), *(web / "js").glob("*.js")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)\s*[=:]\s*["'`](https?:)?//""", text), path.name
