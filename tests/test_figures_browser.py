"""Every figure of the book, in Debian's Chromium on the built book at a 1280 px window: inlined in its page (so
its text takes the page's colour), with no label drawn smaller than 12 px and none outside the figure, light and
dark. Screenshots of each, light and dark, go to test-artifacts/ for a person to look at.

Each figure is measured in both editions: the English page draws NAME.svg, the same page of the zh-Hant edition
(/zh-Hant/…, translated or not yet) draws NAME.zh-Hant.svg in the shipped CJK font."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

# The built book on a static server, as chapter pages are read in the layout test.
from tests.conftest import page_url
from tests.test_layout import base  # noqa: F401, F811

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("en", "zh-Hant")
ARTIFACTS = ROOT / "test-artifacts"
SMALLEST_PX = 12
FIGURE = re.compile(r"!\[[^\]]*\]\((?:\.\./)*assets/figures/([\w.-]+)\.svg\)")

MEASURE = """([name, smallest]) => {
    const svg = document.querySelector(`#figure-${name} svg`);
    if (!svg) return {missing: true};
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const texts = [...svg.querySelectorAll('text')];
    const small = texts.map((t) => parseFloat(getComputedStyle(t).fontSize) * scale)
        .filter((px) => px < smallest - 0.01);
    const outside = texts.filter((t) => {
        const r = t.getBoundingClientRect();
        return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1;
    }).map((t) => t.textContent);
    // A label whose anchor lies inside a box stays inside that box (the smallest one holding it) from left to right.
    const rects = [...svg.querySelectorAll('rect')].map((r) => r.getBoundingClientRect());
    const overflow = texts.filter((t) => t.textContent.trim()).map((t) => {
        const anchor = svg.createSVGPoint();
        anchor.x = t.x.baseVal[0].value; anchor.y = t.y.baseVal[0].value;
        const at = anchor.matrixTransform(svg.getScreenCTM());
        const holders = rects.filter((r) => r.left <= at.x && at.x <= r.right && r.top <= at.y && at.y <= r.bottom)
            .sort((a, b) => a.width * a.height - b.width * b.height);
        const r = t.getBoundingClientRect();
        return holders.length && (r.left < holders[0].left - 1 || r.right > holders[0].right + 1)
            ? t.textContent : null;
    }).filter((s) => s);
    const colour = getComputedStyle(texts[0]).fill;
    const page = getComputedStyle(document.querySelector('.md-typeset')).color;
    return {missing: false, texts: texts.length, small, outside, overflow, colour, page, width: box.width};
}"""


def pages_with_figures() -> list[tuple[str, str]]:
    """(page URL, figure name) for every figure each page shows, from the Markdown."""
    out = []
    for md in sorted((ROOT / "docs").rglob("*.md")):
        if md.stem.endswith(".zh-Hant"):
            continue  # the same figures: each page is opened in both editions below
        url = page_url(md.relative_to(ROOT / "docs").as_posix())
        for name in FIGURE.findall(md.read_text(encoding="utf-8")):
            out.append((url, name))
    return out


def open_figure(browser, site_url, url, name, language):
    """The page at `url` at 1280 px in `language`'s edition, which draws the figure `name` in that language."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{site_url}/{url}" if language == "en" else f"{site_url}/{language}/{url}")
    if language != "en":
        page.evaluate("""async () => { await document.fonts.load("14px 'agentloop CJK'", "\u4e2d");
                                       await document.fonts.ready; }""")
    return page


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("url,name", pages_with_figures())
def test_the_figure_reads_at_the_page_width_in_light_and_dark(base, browser, url, name, language):  # noqa: F811
    page = open_figure(browser, base, url, name, language)
    ARTIFACTS.mkdir(exist_ok=True)
    where = (url.strip("/").replace("/", "-") or "index") + (
        "" if language == "en" else f"-{language}"
    )
    for scheme, shade in (("default", "light"), ("slate", "dark")):
        page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)", scheme)
        found = page.evaluate(MEASURE, [name, SMALLEST_PX])
        assert not found["missing"], f"{name} is not inlined on /{url}"
        assert found["texts"] and found["small"] == [], found
        assert found["outside"] == [], found
        assert found["overflow"] == [], found
        # currentColor: the labels are the page's own text colour, in either scheme.
        assert found["colour"] == found["page"], found
        page.locator(f"#figure-{name}").screenshot(
            path=str(ARTIFACTS / f"figure-{where}-{name}-{shade}.png")
        )
    page.close()


OVERLAPS = """(name) => {
    const svg = document.querySelector(`#figure-${name} svg`);
    const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim());
    const heads = [...svg.querySelectorAll('polygon.head')];
    const box = (e) => e.getBoundingClientRect();
    // Glyph boxes include the font's line gap: shrink each a pixel so that lines set one under the other touch.
    const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const found = [];
    texts.forEach((t, i) => {
        for (const u of texts.slice(i + 1)) if (meet(box(t), box(u))) found.push(`${t.textContent} / ${u.textContent}`);
        for (const h of heads) if (meet(box(t), box(h))) found.push(`${t.textContent} / an arrowhead`);
    });
    return found;
}"""


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("url,name", pages_with_figures())
def test_no_label_is_drawn_over_another_or_over_an_arrowhead(base, browser, url, name, language):  # noqa: F811
    """Issue 47: the loop figure's "no call" sat on its arrowhead and chapter 8's attention labels on each
    other. Measured in the browser, with the fonts the page draws them in."""
    page = open_figure(browser, base, url, name, language)
    assert page.evaluate(OVERLAPS, name) == []
    page.close()
