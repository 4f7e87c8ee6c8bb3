"""Issue 47, the live book's third round, in Debian's Chromium on the built book at a 1280 px window, replaying the
recordings (a static host: the panels replay without a server): nothing in a panel of the chapters readers found
cut off is wider than its column, the rendered prompts' listings wrap inside their box, and an MTP token the
model picked itself is marked without hiding its digits."""

from __future__ import annotations

import pytest

from tests.conftest import edition_base
from tests.test_layout import base  # noqa: F401

# Every element of a shown panel: inside the panel's box, or inside a box of its own that scrolls; no element
# whose content runs past its own box unseen (overflow visible or hidden).
CUT_OFF = """() => {
    const shown = (e) => e.getClientRects().length > 0;
    const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const name = (e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')} "${e.textContent.slice(0, 50)}"`;
    const found = [];
    for (const panel of document.querySelectorAll('.agentloop-panel, .agentloop-stage, .agentloop-media')) {
        if (!shown(panel)) continue;
        const edge = panel.getBoundingClientRect();
        for (const e of [panel, ...panel.querySelectorAll('*')]) {
            if (!shown(e)) continue;
            if (!scrolls(e) && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0)
                found.push(`${name(e)} holds ${e.scrollWidth} px in ${e.clientWidth}`);
            let up = e.parentElement;
            while (up && up !== panel && !scrolls(up)) up = up.parentElement;
            if (up && up !== panel) continue;  // inside a scroll box, which is measured itself
            const r = e.getBoundingClientRect();
            if (r.right > edge.right + 1 || r.left < edge.left - 1)
                found.push(`${name(e)}: ${Math.round(r.left)} to ${Math.round(r.right)}, the panel ${Math.round(edge.left)} to ${Math.round(edge.right)}`);
        }
    }
    // A text listing (a rendered prompt) wraps rather than scroll.
    for (const code of document.querySelectorAll('.md-typeset .language-text pre > code'))
        if (shown(code) && code.scrollWidth > code.clientWidth + 1)
            found.push(`text listing: ${code.scrollWidth} px in ${code.clientWidth}: "${code.textContent.slice(0, 50)}"`);
    return found;
}"""


def draw_everything(page) -> None:
    """Every replay drawn whole and every fold opened, in each tab of the page."""
    labels = [label for label in page.locator(".tabbed-labels > label").all() if label.is_visible()]
    for label in [None, *labels]:
        if label is not None:
            label.click()
        for button in page.locator(".agentloop-panel button.al-all").all():
            if button.is_visible():
                button.click()
        page.wait_for_timeout(300)
        page.evaluate(
            "() => document.querySelectorAll('details').forEach((d) => { d.open = true; })"
        )
        page.wait_for_timeout(300)


@pytest.mark.parametrize(
    "stem", ["03-model-folder", "05-tools", "06-context", "07-media", "11-backends", "16-pi"]
)
def test_nothing_in_a_panel_is_wider_than_its_column_at_1280_px(base, browser, stem):  # noqa: F811
    """Chapter 7's step header ('new this step' past the edge), chapters 11's and 16's side-by-side panels (the
    tokens by role, pi's usage line), chapters 5's and 6's rendered prompts (a line of 1,690 px)."""
    for lang in ("en", "zh-Hant"):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{edition_base(base, lang)}/chapters/{stem}/")
        page.locator(".agentloop-panel, .agentloop-stage").first.wait_for(timeout=20000)
        page.wait_for_timeout(1500)  # the stage panels fetch their recordings
        draw_everything(page)
        assert page.evaluate(CUT_OFF) == [], lang
        page.close()


def test_a_turned_down_guess_is_marked_under_the_token_not_over_its_digits(base, browser):  # noqa: F811
    """Chapter 10: the model's own pick where it turned a guess down was marked by a red bar inside the token's
    box, over most of a one-digit token. The mark is drawn outside the box, under it."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/chapters/10-mtp/")
    for button in page.locator(".agentloop-panel button.al-all").all():
        if button.is_visible():
            button.click()
    corrected = page.locator(".al-corrected")
    corrected.first.wait_for(state="attached", timeout=20000)
    shadows = corrected.evaluate_all("(all) => all.map((e) => getComputedStyle(e).boxShadow)")
    assert shadows and all("inset" not in s and s != "none" for s in shadows), shadows
    page.close()
