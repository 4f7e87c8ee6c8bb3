"""Every chapter at a 1280 px window, in Debian's Chromium on the built book: no panel overflows its column
horizontally (after drawing its whole recorded run), and every listing whose lines are at most the package's
line length (100, pyproject.toml) shows them without scrolling (issue 12, item 9: docs/assets/layout.css).
Screenshots of each replayed panel, light and dark, English and Chinese, go to test-artifacts/ (the live
ones: tests/test_panel_design_browser.py)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from scripts import subset_cjk_font
from tests.conftest import english, page_url, static_site

ROOT = Path(__file__).resolve().parent.parent
LINE_LENGTH = 100
ARTIFACTS = ROOT / "test-artifacts"

MEASURE = """(lineLength) => {
    const shown = (e) => e.offsetParent !== null;
    const panels = [...document.querySelectorAll('.agentloop-panel, .agentloop-stage')].filter(shown)
        .filter((p) => p.scrollWidth > p.clientWidth + 1)
        .map((p) => `${p.className}: ${p.scrollWidth} > ${p.clientWidth}`);
    const listings = [];
    // The listings of the page: not a line-number column, not a panel's own text (measured above).
    const isListing = (pre) => !pre.closest('.linenos, .agentloop-panel, .agentloop-stage, .mermaid');
    for (const pre of [...document.querySelectorAll('.md-typeset pre')].filter(shown).filter(isListing)) {
        const code = pre.querySelector('code') || pre;
        const longest = Math.max(...code.textContent.split('\\n').map((l) => l.length));
        // What a line of lineLength characters needs in this listing's font, against the room it has.
        const style = getComputedStyle(code);
        const ctx = document.createElement('canvas').getContext('2d');
        ctx.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const need = ctx.measureText('x'.repeat(lineLength)).width;
        const room = code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
        const where = (pre.closest('[id]') || {}).id || pre.className;
        if (need > room + 1) listings.push(`${where}: ${lineLength} columns need ${need} px, there are ${room}`);
        else if (longest <= lineLength && code.scrollWidth > code.clientWidth + 1)
            listings.push(`${where}: ${longest} columns scroll: ${code.scrollWidth} > ${code.clientWidth}`);
    }
    return {panels, listings};
}"""


@pytest.fixture(scope="module")
def base(site):
    with static_site(site) as url:
        yield url


# The English chapters: each panel is measured in both languages below (its select), and every page of both
# editions by test_every_page_of_both_editions_fits_1280_px_light_and_dark.
CHAPTERS = [p.stem for p in english((ROOT / "docs" / "chapters").glob("[0-9][0-9]-*.md"))]


@pytest.mark.parametrize("stem", CHAPTERS)
def test_nothing_overflows_the_column_at_1280_px(base, browser, stem):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/chapters/{stem}/")
    for button in page.locator(".agentloop-panel button.al-all").all():  # each replay drawn whole
        if button.is_visible():
            button.click()
    page.wait_for_timeout(300)
    found = page.evaluate(MEASURE, LINE_LENGTH)
    assert found == {"panels": [], "listings": []}, found
    # Each replayed panel, light and dark (Material's slate scheme), in English and in Chinese (the
    # switch draws every panel again, to where it was), for a person to look at.
    ARTIFACTS.mkdir(exist_ok=True)
    page.add_style_tag(content=".md-header { display: none; }")  # it would cover tall panels' shots
    page.mouse.move(0, 0)  # no token hovered: no popover in the shots
    for lang in ("en", "zh-Hant"):
        if lang != "en" and page.locator("select.al-lang").count():
            page.locator("select.al-lang").first.select_option(lang)
            page.wait_for_timeout(500)
            found = page.evaluate(MEASURE, LINE_LENGTH)
            assert found == {"panels": [], "listings": []}, (lang, found)
        for scheme, name in (("default", "light"), ("slate", "dark")):
            page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)", scheme)
            for i, panel in enumerate(
                p for p in page.locator(".agentloop-panel").all() if p.is_visible()
            ):
                panel.screenshot(path=str(ARTIFACTS / f"{stem}-replay-{i + 1}-{lang}-{name}.png"))
    page.close()


# The zh-Hans edition (generated from zh-Hant, the same layout): a few pages, the ones its conversion was read on.
ZH_HANS_PAGES = [
    "",
    "chapters/01-one-question/",
    "chapters/08-prefill-decode/",
    "chapters/13-sandbox/",
    "glossary/",
]


def book_pages() -> list[str]:
    """Every page of the navigation, as its address under a site's root, in both written editions (the zh-Hant
    edition has every page, the ones not translated yet in English), and ZH_HANS_PAGES of the zh-Hans one."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = re.findall(r"^  - (?:.*: )?([\w/.-]+\.md)$", config.split("\nnav:\n")[1], re.M)
    english = [page_url(name) for name in nav]
    assert set(ZH_HANS_PAGES) <= set(english)
    return english + [f"zh-Hant/{url}" for url in english] + [f"zh-Hans/{u}" for u in ZH_HANS_PAGES]


@functools.cache
def font_glyphs(font: Path) -> set[str]:
    return subset_cjk_font.covered(font)


PAGE_OVERFLOW = """() => {
    const root = document.documentElement;
    const wide = [...document.querySelectorAll('.md-content *')]
        .filter((e) => e.getBoundingClientRect().right > root.clientWidth + 1)
        .filter((e) => !e.closest('pre, code, .highlight, .md-typeset__scrollwrap, table, .mermaid'))
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}`);
    return {page: root.scrollWidth - root.clientWidth, wide};
}"""

# The page's Chinese, and whether the book's font is in the text's font stack and loads for it. (This machine has
# fonts-noto-cjk, the subset's source, so Chromium needs the shipped font only where that is missing; the text's
# characters are checked against the subset's own list of glyphs instead.)
CJK_FONT = """async (face) => {
    const han = (text) => [...new Set(text.match(/[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]/g) || [])];
    const cjk = han(document.body.innerText);
    // The page's own text: its article without the panels (whose select names every edition).
    const article = document.querySelector('article').cloneNode(true);
    article.querySelectorAll('.agentloop-panel, .agentloop-stage, select').forEach((e) => e.remove());
    const faces = await document.fonts.load(`16px "${face}"`, cjk.join(''));
    const stack = getComputedStyle(document.querySelector('.md-typeset')).fontFamily
        .replaceAll('"', '').split(',').map((f) => f.trim());
    return {
        stack: stack.find((f) => f.startsWith('agentloop')) === face,
        loaded: faces.length === 1 && faces[0].status === 'loaded',
        cjk: cjk.join(''),
        prose: han(article.textContent).join(''),
    };
}"""


@pytest.mark.parametrize("url", book_pages())
def test_every_page_of_both_editions_fits_1280_px_light_and_dark(base, browser, url):
    """No page of either edition is wider than the window, in light and in dark; a zh-Hant page draws its Chinese
    with the book's own font (this Chromium has no CJK font). A full-page shot of each goes to
    test-artifacts/editions/ for a person to look at."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/{url}")
    page.locator(".md-content").wait_for()
    page.wait_for_timeout(500)  # the panels draw themselves
    name = url.strip("/").replace("/", "-") or "index"
    (ARTIFACTS / "editions").mkdir(parents=True, exist_ok=True)
    for scheme, label in (("default", "light"), ("slate", "dark")):
        page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)", scheme)
        found = page.evaluate(PAGE_OVERFLOW)
        assert found == {"page": 0, "wide": []}, (url, label, found)
        page.screenshot(path=str(ARTIFACTS / "editions" / f"{name}-{label}.png"), full_page=True)
    if url.startswith(("zh-Hant/", "zh-Hans/")):
        # The zh-Hans edition in the SC subset (the mainland's glyph forms), named first.
        sc = url.startswith("zh-Hans/")
        face, font = (
            ("agentloop CJK SC", subset_cjk_font.FONT_SC)
            if sc
            else ("agentloop CJK", subset_cjk_font.FONT)
        )
        found = page.evaluate(CJK_FONT, face)
        assert found["stack"] and found["loaded"] and found["cjk"], (url, found)
        # Every character in the page's face; on a zh-Hans page, what is Traditional on it (the header's and the
        # panels' names of the zh-Hant edition) falls back to the TC subset.
        missing = set(found["prose"]) - font_glyphs(font)
        if sc:
            missing |= set(found["cjk"]) - font_glyphs(font) - font_glyphs(subset_cjk_font.FONT)
        else:
            missing |= set(found["cjk"]) - font_glyphs(font)
        assert not missing, f"{url}: not in the shipped font: {''.join(sorted(missing))}"
    page.close()
