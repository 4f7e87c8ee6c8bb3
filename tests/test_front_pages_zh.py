"""The zh-Hant front pages (landing page, How to read, glossary, API reference) keep their English pages' parts,
the Chinese glossary parses as the English one does (the hover texts come from it), and its terminology table is
rendered from docs/hooks/terms.zh-Hant.tsv, the file the translation's words are fixed in."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FRONT = ["index.md", "how-to-read.md", "glossary.md", "reference.md"]


def hook(name: str):
    spec = importlib.util.spec_from_file_location(f"zh_front_{name}", DOCS / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    sys.path.insert(0, str(DOCS / "hooks"))  # as MkDocs loads a hook: `import editions` beside it
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    return module


@pytest.mark.parametrize("page", FRONT)
def test_the_translation_keeps_the_english_pages_parts_and_is_current(page):
    editions = hook("editions")
    english = DOCS / page
    translated = editions.translation_of(english)
    assert translated.exists(), f"{translated.name} is missing"
    assert editions.differences(english.read_text("utf-8"), translated.read_text("utf-8")) == []
    assert not editions.stale(english), f"{translated.name}: its English page changed since"


@pytest.mark.parametrize("page", FRONT)
def test_no_line_breaks_inside_chinese_prose(page):
    """A newline between two Chinese characters is drawn as a space: each paragraph is one line."""
    text = (DOCS / page.replace(".md", ".zh-Hant.md")).read_text("utf-8")
    cjk = r"[\u3000-\u9fff\uff00-\uffef]"
    assert re.findall(rf"{cjk}\n{cjk}", text) == []


def test_the_chinese_glossary_parses_to_the_same_entries_with_chinese_hover_texts():
    conventions = hook("conventions")
    english, errors = conventions.parse_glossary((DOCS / "glossary.md").read_text("utf-8"))
    chinese, zh_errors = conventions.parse_glossary(
        (DOCS / "glossary.zh-Hant.md").read_text("utf-8"), "docs/glossary.zh-Hant.md"
    )
    assert errors == [] and zh_errors == []
    assert [(t.id, t.chapter) for t in chinese] == [(t.id, t.chapter) for t in english]
    prefill = next(t for t in chinese if t.id == "prefill")
    # The heading 預填（prefill）: both spellings hover; the hover text is the first sentence, up to its 。.
    assert prefill.forms[:2] == ["預填", "prefill"]
    assert prefill.definition == (
        "一步開始時對整個提示做的前向傳遞（長提示則分成每段 512 個 token 的幾次傳遞），它填滿快取並給出第一個 token。"
    )
    hover = conventions.glossary_terms(chinese)
    assert hover["預填"] == hover["prefill"] == prefill.definition
    for en, zh in zip(english, chinese):
        # Each heading shows the English term (kept English, or beside the Chinese), and each definition is Chinese.
        assert en.term in zh.forms, (en.term, zh.forms)
        assert re.search(r"[\u4e00-\u9fff]", zh.definition), zh.id
        assert zh.definition.endswith("。"), zh.definition


def test_the_translated_glossary_and_reference_are_exempt_as_the_english_ones_are():
    conventions = hook("conventions")
    terms, _ = conventions.parse_glossary((DOCS / "glossary.md").read_text("utf-8"))
    for page in ("glossary.zh-Hant.md", "reference.zh-Hant.md"):
        text = (DOCS / page).read_text("utf-8")
        assert conventions.check_page(page, text, page, terms) == []
    # The landing page and How to read are held to the conventions in Chinese too.
    for page in ("index.zh-Hant.md", "how-to-read.zh-Hant.md"):
        assert conventions.check_page(page, (DOCS / page).read_text("utf-8"), page, terms) == []


def test_the_terminology_table_is_the_terms_file_rendered():
    terms = hook("terms")
    tsv = terms.TSV.read_text("utf-8")
    rows = terms.terms(tsv)
    assert ("prefill", "預填") in rows and ("glossary", "術語表") in rows
    page = (DOCS / "glossary.zh-Hant.md").read_text("utf-8")
    assert page.count(terms.MARKER) == 1
    # What the hook reads of the page: its path, which names its edition.
    glossary = SimpleNamespace(file=SimpleNamespace(src_uri="glossary.zh-Hant.md"))
    rendered = terms.on_page_markdown(page, glossary, None, None)
    assert terms.MARKER not in rendered and "## 術語對照表 {#terms}" in rendered
    for en, zh in rows:
        assert f"| {en} | {zh} |" in rendered
    assert "docs/hooks/terms.py" in (ROOT / "mkdocs.yml").read_text("utf-8")
    with pytest.raises(ValueError, match="English<TAB>zh-Hant<TAB>zh-Hans"):
        terms.terms("prefill\n")
