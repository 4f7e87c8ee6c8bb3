"""The panels' two languages (docs/assets/i18n.js): every key in English and Traditional Chinese, every
key a module asks for in the table, no English words of a panel's own outside the table, and a font
that has a glyph for every Chinese character the panels can show (scripts/subset_cjk_font.py).

The table is read by Node from the module itself, so the test sees what the browser sees. The literal
check scans each module's string literals (comments left out): one that reads as English prose (two
words, or a capitalised word alone) must be in the allowlist below, which holds commands, HTTP names
and keys, not sentences a reader sees. The browser half (the switch, a panel drawn in Chinese) is in
tests/test_panel_design_browser.py and tests/test_chapter7_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts import subset_cjk_font, zh_hans_assets

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "docs" / "assets"
# The modules whose words go through the string table: every panel module but the table itself
# (docs/assets/*.js and its folders panel/ and stages/, as the font's subsetter finds them).
MODULES = [
    p.relative_to(ASSETS).as_posix()
    for p in subset_cjk_font.modules()
    if p.name not in ("i18n.js", "i18n-zh-Hans.js")  # the table, and its generated zh-Hans
]
# Literals that look like words but are not sentences for the reader: commands the notes quote as
# code, HTTP header names and values, keyboard keys, selectors.
NOT_PROSE = {
    "python3 -m http.server -d site 8000",
    "make serve",
    "Content-Type",
    "Accept",
    "X-Agentloop-Token",
    "ArrowRight",
    "ArrowLeft",
    "Home",
    "End",
    "Escape",
    "POST",
    "GET",
    "Infinity",
    "Hello",  # stages/sampling.js: the message it asks the model about when no recording names one
}
# Where a model's fact comes from (stages/specs.js's table): a file's field, not a sentence.
FIELD_REFERENCE = re.compile(r"(config\.json|text_config\.|generation_config)")


@pytest.fixture(scope="module")
def table() -> dict:
    return zh_hans_assets.i18n_table()


def literals(source: str) -> list[str]:
    """The string literals of a JavaScript module, comments skipped; a template literal gives its
    text parts (the ${…} parts are code)."""
    found, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            i = source.index("*/", i) + 2
        elif c in "\"'":
            j = i + 1
            while source[j] != c:
                j += 2 if source[j] == "\\" else 1
            found.append(source[i + 1 : j])
            i = j + 1
        elif c == "`":
            j, part, depth = i + 1, "", 0
            while source[j] != "`" or depth:
                if not depth and source.startswith("${", j):
                    found.append(part)
                    part, depth, j = "", 1, j + 2
                    continue
                if depth:
                    depth += {"{": 1, "}": -1}.get(source[j], 0)
                else:
                    part += source[j]
                j += 2 if source[j] == "\\" and not depth else 1
            found.append(part)
            i = j + 1
        elif c == "/" and re.search(r"[(,=:!&|?{};]\s*$", source[max(0, i - 30) : i]):
            j = i + 1  # a regular expression literal: skipped whole
            while source[j] != "/":
                j += 2 if source[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return found


def prose(text: str) -> bool:
    """Reads as English a reader would see: two words in a row, or one capitalised word."""
    text = text.strip()
    if not text or text in NOT_PROSE or FIELD_REFERENCE.match(text):
        return False
    if all(w.startswith(("al-", "als-", ".al-", ".als-")) for w in text.split()):
        return False  # class names and selectors
    return bool(re.search(r"[A-Za-z]{2,}[,.]?\s+[A-Za-z]{2,}", text)) or bool(
        re.fullmatch(r"[A-Z][a-z]{2,}[.…:]?", text)
    )


def test_every_key_has_both_languages_with_the_same_placeholders(table):
    # zh-Hans is not written: i18n.js reads it from i18n-zh-Hans.js, generated (tests/test_zh_hans.py).
    assert table["langs"] == ["en", "zh-Hant", "zh-Hans"]
    for key, entry in table["strings"].items():
        assert set(entry) == {"en", "zh-Hant", "zh-Hans"}, key
        en, zh, hans = entry["en"], entry["zh-Hant"], entry["zh-Hans"]
        assert en.strip() and zh.strip() and hans.strip(), key
        placeholders = sorted(re.findall(r"\{(\w+)\}", en))
        assert placeholders == sorted(re.findall(r"\{(\w+)\}", zh)), key
        assert placeholders == sorted(re.findall(r"\{(\w+)\}", hans)), key


def test_every_key_a_module_asks_for_is_in_the_table(table):
    keys = set(table["strings"])
    namespaces = {k.split(".")[0] for k in keys}
    for name in MODULES:
        source = (ASSETS / name).read_text(encoding="utf-8")
        for text in literals(source):
            if re.fullmatch(r"[a-z]+\.[a-z_]*[a-z]", text) and text.split(".")[0] in namespaces:
                assert text in keys, f"{name} asks for {text!r}, which the table lacks"
    # Keys made from a value: each value the panels can meet has its entry.
    from agentloop.events import CHANNELS

    form = (ASSETS / "panel" / "form.js").read_text(encoding="utf-8")
    made = {f"ch.{c}" for c in CHANNELS}
    made |= {f"set.{k}" for k in re.findall(r'\{ key: "(\w+)", type:', form)}
    assert "set.temperature" in made  # the form's SETTINGS were found
    made |= {f"role.{r}" for r in ("system", "user", "assistant", "tool")}
    made |= {f"kind.{k}" for k in ("tiny", "trained", "real", "served")}
    made |= {f"replay.{s}" for s in ("finished", "playing", "paused", "ready")}
    made |= {f"perm.{a}_{w}" for a in ("approved", "denied") for w in ("auto", "reader", "other")}
    made |= {f"mtp.{s}" for s in ("kept", "down", "unseen")}
    made |= {f"phase.{p}" for p in ("prefill", "decode", "tool")}
    made |= {f"tab.{k}" for k in ("steps", "model", "context")}
    from demo_server.backends import WAYS

    made |= {f"menu.way_{w.replace('-', '_')}" for w in WAYS}
    assert made <= keys, sorted(made - keys)


@pytest.mark.parametrize("name", MODULES)
def test_no_panel_module_writes_english_outside_the_table(name):
    source = (ASSETS / name).read_text(encoding="utf-8")
    english = [text for text in literals(source) if prose(text)]
    assert not english, f"{name} shows words outside i18n.js: {english}"


def test_the_literal_check_catches_a_sentence_and_a_button_label():
    # The check itself: what an untranslated panel would hold is flagged, what is code is not.
    src = 'el("button", "al-btn", "Play"); x = `Step ${n} of ${m}`; // "A comment here"\n'
    assert [t for t in literals(src) if prose(t)] == ["Play", "Step "]
    assert not prose("al-btn al-play") and not prose("make serve")
    assert prose("Could not load the model")


def test_the_font_has_every_chinese_character_the_panels_can_show():
    used = subset_cjk_font.characters()
    assert len(used) > 300  # the table's Chinese, the server's errors, the examples' notes
    missing = used - subset_cjk_font.covered(subset_cjk_font.FONT)
    assert not missing, f"run scripts/subset_cjk_font.py: {''.join(sorted(missing))}"
    assert subset_cjk_font.FONT.stat().st_size < 400_000  # a subset, not the whole font
    # The zh-Hans edition's SC subset: every character of that edition (the same texts, converted).
    used_sc = subset_cjk_font.characters_sc()
    assert {"箱", "这", "们"} <= used_sc  # the table's 沙箱, and Simplified forms
    missing = used_sc - subset_cjk_font.covered(subset_cjk_font.FONT_SC)
    assert not missing, f"run scripts/subset_cjk_font.py: {''.join(sorted(missing))}"
    assert subset_cjk_font.FONT_SC.stat().st_size < 400_000
    assert subset_cjk_font.check() == 0


def test_chinese_has_no_english_unit_and_no_stray_space_before_a_particle(table):
    """Issue 47: '第 1 步的第 1 個呼叫 的許可' (a space where a call's name met 的) and 'ms' in Chinese text. A
    duration's unit is 毫秒 wherever the Chinese names it, and a panel's line asks the table for it."""
    zh = {key: entry["zh-Hant"] for key, entry in table["strings"].items()}
    assert [k for k, v in zh.items() if re.search(r"(?<![\w{])ms\b", v)] == []
    call = zh["call.name"].format(step=1, n=1)
    assert zh["perm.title"].replace("{call}", call) == "第 1 步的第 1 個呼叫的許可"
    for name in MODULES:
        source = (ASSETS / name).read_text(encoding="utf-8")
        assert re.findall(r'kv\([^,]+, "ms"', source) == [], name
