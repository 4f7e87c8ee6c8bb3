"""Chapter 16 in a real browser, live: the same question in the built-in harness (first panel) and
in pi (second panel), against the real demo server, real pi from `npm ci` and the embedded default
model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.harnesses.pi.command import NODE, PI_CLI
from tests.conftest import demo_server

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "What is 48213 * 9127?"


@pytest.fixture(scope="module")
def site(site):
    """The book (conftest's), once pi is there to run."""
    assert NODE.exists() and PI_CLI.exists(), "pi is missing: run `npm ci`"
    return site


def ask(panel, question: str) -> str:
    """Ask in one panel, approve its tool call, wait for the end; the panel's text."""
    panel.locator("textarea").fill(question)
    panel.locator("button.al-run").click()
    approve = panel.locator("button.al-approve").first
    approve.wait_for(timeout=120000)  # tokens streamed, the call parsed, permission asked
    approve.click()
    panel.get_by_text("Run ended").wait_for(timeout=120000)
    return panel.inner_text()


def test_the_same_question_live_in_both_harnesses(site, browser, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # pi never sees the user's ~/.pi
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    with demo_server(site, wait_s=120, model=None, device="cpu") as server:
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(f"{server.url}/chapters/16-pi/")
        simple, pi = page.locator(".al-side-by-side .agentloop-panel").all()
        pi.locator("button.al-run").wait_for(timeout=20000)  # live: the server answered
        assert simple.locator("select.al-harness-select").input_value() == "simple"
        assert not simple.locator("select.al-pi-model-select").is_visible()  # for pi only
        assert pi.locator("select.al-harness-select").input_value() == "pi"
        # The model pi asks: this page's; pi has no credentials here, and the panel says so.
        pi.get_by_text("pi has no credentials").wait_for(timeout=20000)
        assert pi.locator("select.al-pi-model-select").input_value() == ""

        # One model serves every tab, so the two runs go one after the other.
        answer = str(48213 * 9127)
        assert answer in ask(simple, QUESTION)
        text = ask(pi, QUESTION)
        assert answer in text and "Request pi sent to the model" in text
        assert pi.locator(".al-tok").count() > 5  # this page's model: every token, as on the left
        failures: list = []
        page.on("response", lambda r: r.status >= 500 and failures.append((r.status, r.url)))

        # Issue 42: a second question in the same conversation starts pi again on its session (it
        # ended in a 500 before); a denial and a stop end their runs too, with no 500 anywhere.
        def turn_end(n: int):
            pi.locator(f".al-turn:nth-child({n}) .al-run-end").wait_for(timeout=180000)

        pi.locator("textarea").fill(QUESTION)
        pi.locator("button.al-run").click()
        pi.locator(".al-turn:nth-child(2) button.al-approve").wait_for(timeout=120000)
        pi.locator(".al-turn:nth-child(2) button.al-approve").click()
        turn_end(2)
        assert answer in pi.locator(".al-turn:nth-child(2)").inner_text()
        pi.locator("textarea").fill(QUESTION)
        pi.locator("button.al-run").click()
        pi.locator(".al-turn:nth-child(3) button.al-deny").wait_for(timeout=120000)
        pi.locator(".al-turn:nth-child(3) button.al-deny").click()
        turn_end(3)
        pi.locator("textarea").fill(QUESTION)
        pi.locator("button.al-run").click()
        pi.locator(".al-turn:nth-child(4) .al-tok").first.wait_for(timeout=120000)
        pi.locator("button.al-stop").click()
        turn_end(4)
        # Stop ended the step that was running: no empty step after it.
        stopped = pi.locator(".al-turn:nth-child(4) .al-step-title")
        assert stopped.filter(has_text="Step 1").count() == 1
        assert stopped.filter(has_text="Step 2").count() == 0
        assert not failures, failures
        assert "failed" not in pi.inner_text().lower()
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".al-side-by-side").screenshot(path=str(ARTIFACTS / "chapter16-live.png"))
        page.close()
