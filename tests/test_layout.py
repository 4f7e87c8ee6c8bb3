"""Every chapter at a 1280 px window, in Debian's Chromium on the built book: no panel overflows its column
horizontally (after drawing its whole recorded run), and every listing whose lines are at most the package's
line length (100, pyproject.toml) shows them without scrolling (issue 12, item 9: docs/assets/layout.css).
Screenshots of each replayed panel, light and dark, English and Chinese, go to test-artifacts/ (the live
ones: tests/test_panel_design_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import static_site

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


CHAPTERS = sorted(p.stem for p in (ROOT / "docs" / "chapters").glob("[0-9][0-9]-*.md"))


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
