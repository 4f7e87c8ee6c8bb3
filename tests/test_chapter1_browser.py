"""Chapter 1 in a real browser: live against the real demo server on the embedded default model, and as a
replay with no server. Screenshots of both go to test-artifacts/."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from demo_server.app import create_app
from demo_server.client import Client, ServerThread, free_port
from tests.conftest import CHROMIUM, build_book

ROOT = Path(__file__).resolve().parent.parent

ARTIFACTS = ROOT / "test-artifacts"
QUESTION = "What is 48213 * 9127?"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (make system)")
    return build_book(tmp_path_factory.mktemp("book") / "site")


def chapter1(base: str) -> str:
    return f"{base}/chapters/{next((ROOT / 'docs' / 'chapters').glob('01-*.md')).stem}/"


def test_live_ask_stream_approve_answer(site, browser):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    port = free_port()
    server = ServerThread(
        create_app(model=None, site_dir=site, port=port, device="cpu"), port
    ).start()
    try:
        Client(server.url).wait_ready(120)
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
    finally:
        server.stop()
        torch.set_num_threads(threads)


def test_replay_with_no_server(site, browser):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    static = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=static.serve_forever, daemon=True).start()
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        page.goto(chapter1(f"http://127.0.0.1:{static.server_address[1]}"))
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
    finally:
        static.shutdown()
