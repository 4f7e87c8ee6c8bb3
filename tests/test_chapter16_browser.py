"""Chapter 16 in a real browser, live: the same question in the built-in harness (first panel), in pi
with the book's tools (second panel) and in pi's own loop (the next pair's first), against the real demo
server, real pi from `npm ci` and the embedded default model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.harnesses.pi.command import NODE, PI_CLI
from tests.conftest import answer_each_call, demo_server

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
        simple, pi = page.locator(".al-side-by-side").first.locator(".agentloop-panel").all()
        pi.locator("button.al-run").wait_for(timeout=20000)  # live: the server answered
        assert simple.locator("select.al-harness-select").input_value() == "simple"
        assert not simple.locator("select.al-pi-model-select").is_visible()  # for pi only
        assert pi.locator("select.al-harness-select").input_value() == "pi"
        # The model pi asks: this page's; pi has no credentials here, and the panel says so.
        pi.get_by_text("pi has no credentials").wait_for(timeout=20000)
        assert pi.locator("select.al-pi-model-select").input_value() == ""

        # pi's own loop (the second pair's left panel): its form offers pi's own tools to tick,
        # pi's defaults ticked, in place of the book's.
        own = page.locator(".al-side-by-side").nth(1).locator(".agentloop-panel").first
        own.locator("button.al-run").wait_for(timeout=20000)
        assert own.locator("select.al-pi-tools-select").input_value() == "pi"
        shown = own.locator("fieldset.al-tools").evaluate_all(
            "sets => sets.filter(f => f.style.display !== 'none').map(f => [...f.querySelectorAll("
            "'input')].map(i => [i.value, i.checked]))"
        )
        assert shown == [
            [
                ["read", True],
                ["bash", True],
                ["edit", True],
                ["write", True],
                ["grep", False],
                ["find", False],
                ["ls", False],
            ]
        ]
        assert pi.locator("select.al-pi-tools-select").input_value() == "book"

        # One model serves every tab, so the two runs go one after the other.
        answer = str(48213 * 9127)
        assert answer in ask(simple, QUESTION)
        text = ask(pi, QUESTION)
        assert answer in text and "Request pi sent to the model" in text
        # pi's own loop on the default model, not forced: its bash runs python3 -c in the sandbox (issue 42).
        text = ask(own, QUESTION)
        assert answer in text and "python3 -c" in text and "Request pi sent to the model" in text
        assert pi.locator(".al-tok").count() > 5  # this page's model: every token, as on the left
        failures: list = []
        page.on("response", lambda r: r.status >= 500 and failures.append((r.status, r.url)))

        # Issue 42: a second question in the same conversation starts pi again on its session (it
        # ended in a 500 before); a denial and a stop end their runs too, with no 500 anywhere.
        def turn(n: int):
            return pi.locator(f".al-turn:nth-child({n})")

        # The model may answer from the conversation, or compute again: approved if it asks.
        pi.locator("textarea").fill("And what is that number plus 1?")
        pi.locator("button.al-run").click()
        answer_each_call(turn(2), "approve")
        assert "server failed" not in turn(2).inner_text().lower()
        # New conversation: a fresh session, so the model computes again, and the reader denies it.
        pi.locator("button.al-new-conversation").click()
        pi.locator("textarea").fill(QUESTION)
        pi.locator("button.al-run").click()
        assert answer_each_call(turn(1), "deny") >= 1
        pi.locator("textarea").fill(QUESTION)
        # Slow pace (0.3 s before each token): the run is still going when Stop is clicked.
        pi.locator(".al-form .al-pace input[value=slow]").check()
        pi.locator("button.al-run").click()
        turn(2).locator(".al-tok").first.wait_for(timeout=180000)
        pi.locator("button.al-stop").click()
        turn(2).locator(".al-run-end").wait_for(timeout=180000)
        # Stop ended the step that was running: no empty step after it.
        stopped = turn(2).locator(".al-step-title")
        assert stopped.filter(has_text="Step 1").count() == 1
        assert stopped.filter(has_text="Step 2").count() == 0
        assert not failures, failures
        assert "server failed" not in pi.inner_text().lower()
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".al-side-by-side").first.screenshot(
            path=str(ARTIFACTS / "chapter16-live.png")
        )
        page.close()
