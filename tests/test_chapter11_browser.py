"""Chapter 11's two side-by-side live panels (issue 43, point 5), in Debian's Chromium against the real demo
server at 1280 px: each says which backend it recorded on and runs on, "What runs the model" offers the ways this
machine has and says what Load will start, and with "Model" opened in both nothing is wider than its column."""

from __future__ import annotations

import pytest

from tests.conftest import chapter_url, demo_server
from tests.test_live_book_browser import CUT_OFF


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


@pytest.mark.parametrize("lang", ["en", "zh-Hant"])
def test_both_panels_say_their_backend_and_fit_with_model_open(server, browser, lang):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(chapter_url(server.url, "11", lang))  # its panels start in the page's language
    panels = page.locator(".agentloop-panel")
    panels.nth(1).locator("button.al-run").wait_for(timeout=30000)
    # The vLLM recording's panel says it runs live on transformers here; the other runs what it recorded.
    panels.nth(1).locator(".al-runs-on").filter(has_text="vLLM").wait_for(timeout=20000)
    for i in range(2):
        panels.nth(i).locator("summary.al-model-summary").click()
        panels.nth(i).locator(".al-model-select option").first.wait_for(
            state="attached", timeout=30000
        )
    ways = panels.nth(0).locator(".al-backend-select option")
    assert ways.count() >= 1
    values = [o.get_attribute("value") for o in ways.all()]
    assert values[0] == "transformers"
    # Before Load, what it will start on the chosen way.
    says = panels.nth(0).locator(".al-backend-says")
    assert says.inner_text().strip()
    if "vllm-local" in values:
        panels.nth(0).locator(".al-backend-select").select_option("vllm-local")
        assert ".venv-vllm" in says.inner_text()
    assert page.evaluate(CUT_OFF) == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
    page.close()
