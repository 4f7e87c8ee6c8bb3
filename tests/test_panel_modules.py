"""The panels' ES modules parse and link: each of docs/assets/*.js, panel/*.js and stages/*.js is imported by the
real Node that pi runs on (node_modules/node, pinned in package-lock.json), so a duplicate declaration or an
import of a name a module does not export fails here in a second, not as a panel that silently never starts in
every browser test. And docs/assets/README-panel.md, the folder's list of files, names every one of them.

Linking happens before any module's code runs; what runs after it (the modules reach for `document` and
`window`, which Node has not) is not this test's: the browser tests run it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scripts import subset_cjk_font

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "docs" / "assets"
NODE = ROOT / "node_modules" / "node" / "bin" / "node"
IMPORT = """
const failed = [];
for (const name of process.argv.slice(1)) {
  try {
    await import("./" + name);
  } catch (err) {
    // A module that parsed and linked may still fail as it runs, outside a browser: not ours to judge.
    if (err instanceof SyntaxError) failed.push(name + ": " + err.message);
  }
}
console.log(JSON.stringify(failed));
"""


def module_names() -> list[str]:
    """The panels' modules, as paths relative to docs/assets (the vendored libraries left out)."""
    return [p.relative_to(ASSETS).as_posix() for p in subset_cjk_font.modules()]


@pytest.fixture(scope="module")
def modules(tmp_path_factory) -> Path:
    assert NODE.exists(), f"{NODE} is missing: run `npm ci` (make setup does)"
    folder = tmp_path_factory.mktemp("assets")
    for name in module_names():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ASSETS / name, folder / name)
    (folder / "package.json").write_text('{"type": "module"}')
    return folder


def test_every_panel_module_parses_and_links(modules):
    names = module_names()
    assert {"panel.js", "i18n.js", "panel/form.js", "stages/tokens.js"} <= set(names)
    ran = subprocess.run(
        [str(NODE), "--input-type=module", "-e", IMPORT, *names],
        cwd=modules,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == []


def test_a_broken_module_is_caught(modules, tmp_path):
    """The check itself: a duplicate declaration and a missing export both fail."""
    for name, text in {
        "twice.js": "const a = 1;\nconst a = 2;\n",
        "missing.js": 'import { nothing } from "./dom.js";\n',
    }.items():
        (modules / name).write_text(text)
    ran = subprocess.run(
        [str(NODE), "--input-type=module", "-e", IMPORT, "twice.js", "missing.js"],
        cwd=modules,
        capture_output=True,
        text=True,
        timeout=60,
    )
    failed = json.loads(ran.stdout.strip().splitlines()[-1])
    assert [f.split(":")[0] for f in failed] == ["twice.js", "missing.js"], failed


def test_the_folder_readme_lists_every_module():
    readme = (ASSETS / "README-panel.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([\w/-]+\.js)` \|", readme, flags=re.M))
    assert listed == set(module_names())
