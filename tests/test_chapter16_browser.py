"""Chapter 16 in a real browser, live: the same question in the built-in harness (first panel) and
in pi (second panel), against the real demo server, real pi from `npm ci` and the embedded default
model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop.harnesses import pi_harness
from demo_server.app import create_app
from demo_server.client import Client, ServerThread, free_port
from tests.conftest import CHROMIUM, build_book

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "What is 48213 * 9127?"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} is missing: install Debian's chromium (make system)"
    )
    assert pi_harness.NODE.exists() and pi_harness.PI_CLI.exists(), "pi is missing: run `npm ci`"
    return build_book(tmp_path_factory.mktemp("book") / "site")


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
    import torch

    monkeypatch.setenv("HOME", str(tmp_path))  # pi never sees the user's ~/.pi
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr(pi_harness, "_menu", {})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    port = free_port()
    app = create_app(model=None, site_dir=site, port=port, device="cpu")
    server = ServerThread(app, port).start()
    try:
        Client(server.url).wait_ready(120)
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
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".al-side-by-side").screenshot(path=str(ARTIFACTS / "chapter16-live.png"))
        page.close()
    finally:
        server.stop()
        torch.set_num_threads(threads)
