"""Chapter 1 in a real browser: live against the real demo server on the embedded default model, and as a
replay with no server. Screenshots of both go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import demo_server, english, static_site

ROOT = Path(__file__).resolve().parent.parent

ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "What is 48213 * 9127?"


def chapter1(base: str) -> str:
    return f"{base}/chapters/{english((ROOT / 'docs' / 'chapters').glob('01-*.md'))[0].stem}/"


def test_live_ask_stream_approve_answer(site, browser):
    with demo_server(site, wait_s=120, model=None, device="cpu") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        page.goto(chapter1(server.url))
        panel = page.locator(".agentloop-panel").first
        panel.locator("button.al-run").wait_for(timeout=20000)  # live: the server answered
        panel.locator("textarea").fill(QUESTION)
        panel.locator("button.al-run").click()
        approve = panel.locator("button.al-approve").first
        approve.wait_for(timeout=60000)  # tokens streamed, the call parsed, permission asked
        assert panel.locator(".al-tok").count() > 5
        approve.click()
        panel.get_by_text("Run ended").wait_for(timeout=60000)
        text = panel.inner_text()
        assert str(48213 * 9127) in text  # the tool's result, and the answer that uses it
        ARTIFACTS.mkdir(exist_ok=True)
        panel.screenshot(path=str(ARTIFACTS / "chapter1-live.png"))
        page.close()


def test_replay_with_no_server(site, browser):
    with static_site(site) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        page.goto(chapter1(base))
        panel = page.locator(".agentloop-panel").first
        panel.get_by_text("make serve").first.wait_for(timeout=20000)  # it says how to make it live
        play = panel.locator("button", has_text="Play").first
        if play.count():
            panel.locator("select.al-speed").select_option(
                "20"
            )  # 1x takes as long as the recorded run did
            play.click()
        panel.locator(".al-run-end").wait_for(timeout=60000)
        assert str(48213 * 9127) in panel.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        panel.screenshot(path=str(ARTIFACTS / "chapter1-replay.png"))
        page.close()
