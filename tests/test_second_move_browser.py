"""A reader's second move (issue 41), live in Debian's Chromium against the real demo server on the embedded
default model, agent-qwen3_5, its own tokens, greedy: after a first question, a follow-up that needs its result
(chapter 1, chapter 6's Qwen3.5 tab), a third question in the same conversation, a file written to /data and read
back by a later question (chapter 13), a denied call answered without a number the tool never printed, then
allowed (chapter 15). Then the same on agent-gemma4, loaded as the page's model, in chapter 6's Gemma 4 tab: a
follow-up and a denial (not a file: its card gives files 0.02, and chapter 3 says why). Nothing is forced: each
answer is the model's."""

from __future__ import annotations

import pytest

from agentloop.paths import MODELS_DIR
from agentloop.training.evaluate_sessions import honest
from tests.conftest import answer_each_call, chapter_url, demo_server, live_panel


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2400})
    failures: list = []
    page.on("response", lambda r: r.status >= 500 and failures.append((r.status, r.url)))
    yield page
    page.close()
    assert not failures, failures  # no request of a second move ends in a 500


def ask(panel, question: str, decide: str = "approve") -> str:
    """Ask `question` in `panel`, answer every permission it asks with `decide` (approve or deny) until its turn
    ends; that turn's final answer."""
    turn = panel.locator(f".al-turn:nth-child({panel.locator('.al-turn').count() + 1})")
    panel.locator("textarea").fill(question)
    panel.locator("button.al-run").click()
    answer_each_call(turn, decide)
    assert "server failed" not in turn.inner_text().lower()
    return turn.locator(".al-final").last.inner_text()


def continuing(panel) -> str:
    return panel.locator(".al-continuing").inner_text()


def test_chapter1_a_follow_up_and_a_third_question(server, page):
    panel = live_panel(page, chapter_url(server.url, "01"))
    assert "391" in ask(panel, "What is 17 * 23?")
    assert continuing(panel) == "continuing: 1 earlier question"
    assert "782" in ask(panel, "and times 2?")  # needs the first answer: 391 × 2
    assert continuing(panel) == "continuing: 2 earlier questions"
    # An independent third question: answered for itself, not the earlier question again.
    assert "377" in ask(panel, "What is 500 minus 123?")
    panel.locator("button.al-new-conversation").click()
    assert panel.locator(".al-continuing").is_hidden()


def test_chapter1_zh_hant_the_follow_up_and_its_label_in_chinese(server, page):
    panel = live_panel(page, chapter_url(server.url, "01", "zh-Hant"))
    assert "391" in ask(panel, "What is 17 * 23?")
    assert continuing(panel) == "接續對話：前面有 1 個問題"
    assert "782" in ask(panel, "and times 2?")
    assert continuing(panel) == "接續對話：前面有 2 個問題"


def test_chapter6_qwen_tab_a_follow_up_on_a_list(server, page):
    page.goto(chapter_url(server.url, "06"))
    page.locator(".tabbed-labels > label", has_text="Qwen3.5").last.click()
    panel = page.locator(".agentloop-panel[data-replay$='ch06-qwen.jsonl']")
    panel.locator("button.al-run").wait_for(timeout=30000)
    assert "[1, 3, 5, 9]" in ask(panel, "sort 5, 3, 9 and 1 smallest first")
    assert "[9, 5, 3, 1]" in ask(panel, "now largest first")


def test_chapter13_a_file_written_then_read_back(server, page):
    panel = live_panel(page, chapter_url(server.url, "13"))
    # Five numbers: asked to save three, or small ones, the model often sorts them instead (chapter 3 says so).
    ask(panel, "Save 120, 450, 300, 85 and 610 to /data/numbers.txt.")
    assert "1565" in ask(panel, "What is the sum of the numbers in /data/numbers.txt?")


def test_chapter15_a_denied_call_is_answered_honestly_then_allowed(server, page):
    panel = live_panel(page, chapter_url(server.url, "15"))
    question = "What is 48213 * 9127?"
    denied = ask(panel, question, "deny")
    assert honest(denied, question), denied  # no number the question does not hold
    assert "440040051" in ask(panel, "Try again, I will allow it.")


@pytest.fixture(scope="module")
def gemma_server(site):
    with demo_server(site, wait_s=300, model=str(MODELS_DIR / "agent-gemma4"), device="cpu") as srv:
        yield srv


def test_chapter6_gemma_tab_agent_gemma4_follows_up_and_is_honest_after_a_denial(
    gemma_server, page
):
    page.goto(chapter_url(gemma_server.url, "06"))
    page.locator(".tabbed-labels > label", has_text="Gemma 4").last.click()
    panel = page.locator(".agentloop-panel[data-replay$='ch06-gemma.jsonl']")
    panel.locator("button.al-run").wait_for(timeout=30000)
    assert "391" in ask(panel, "What is 17 * 23?")
    assert "782" in ask(panel, "and times 2?")  # needs the first answer
    question = "What is 48213 * 9127?"
    denied = ask(panel, question, "deny")
    assert honest(denied, question), denied
