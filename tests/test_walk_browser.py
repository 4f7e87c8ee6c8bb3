"""Every chapter live, as a reader walks it (issue 47): in Debian's Chromium at a 1280 px window against the real demo
server on the embedded default model, the first live panel of each chapter with one asks a question (its call
approved), then, in Chinese, a follow-up in the same conversation; a new conversation's call is denied; a run
paused step by step is stopped. Nothing on the page fails meanwhile: no page error, no console error, no request
that fails or answers an error, and nothing in a panel wider than its column."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import chapter_url, demo_server
from tests.test_live_book_browser import CUT_OFF

# The chapters with a live loop panel, and the home page's ("" is the book's first page).
CHAPTERS = ["", "01", "02", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16"]


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


def watch(page) -> list[str]:
    """What goes wrong on `page` from now on: page errors, console errors, failed requests, error answers."""
    wrong: list[str] = []
    page.on("pageerror", lambda e: wrong.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and wrong.append(f"console error: {m.text}"))
    page.on(
        "requestfailed",
        lambda r: wrong.append(f"request failed: {r.method} {r.url} {r.failure}"),
    )
    page.on(
        "response",
        lambda r: r.status >= 400 and wrong.append(f"{r.status} for {r.request.method} {r.url}"),
    )
    return wrong


def ask(panel, question: str, answer: str | None) -> None:
    """Ask `question` and wait for the run's end, answering each call it asks about with `answer` ("approve",
    "deny"; None: no call expected to wait)."""
    turns = panel.locator(".al-turn").count()
    panel.locator("textarea.al-question").fill(question)
    panel.locator("button.al-run").click()
    turn = panel.locator(".al-turn").nth(turns)
    end = turn.locator(".al-run-end")
    waiting = turn.locator(
        ".al-permission:not(.al-approved):not(.al-denied):not(.al-unanswered) .al-"
        + (answer or "approve")
    )
    while not end.is_visible():
        if answer and waiting.count():
            waiting.first.click()
        panel.page.wait_for_timeout(200)


@pytest.mark.parametrize("number", CHAPTERS, ids=lambda n: n or "home")
def test_a_reader_walks_the_chapter_live(server, browser, number):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    wrong = watch(page)
    page.goto(chapter_url(server.url, number) if number else f"{server.url}/")
    panel = page.locator(".agentloop-panel:visible").first
    panel.locator("button.al-run").wait_for(timeout=60000)
    if panel.locator("input[name=auto_approve]").is_checked():  # every live form starts asking
        pytest.fail("the live form starts with auto-approve on")

    ask(panel, "What is 17 * 23?", "approve")
    page.locator("select.al-lang").first.select_option("zh-Hant")
    ask(panel, "and times 2?", "approve")
    assert panel.locator(".al-turn").count() == 2  # one conversation, two turns
    assert panel.locator("button.al-run").inner_text() == "執行"  # the form, in Chinese

    panel.locator("button.al-new-conversation").click()
    ask(panel, "What is 48213 * 9127?", "deny")
    assert panel.locator(".al-turn").count() == 1
    if panel.locator(
        ".al-permission"
    ).count():  # a run that called a tool (the no-tools tab does not)
        assert panel.locator(".al-permission.al-denied").count() >= 1

    # Step by step, a Stop pressed while the run waits for Next ends it (Next itself after the prefill).
    panel.locator(".al-form .al-pace input[value=step]").check()
    panel.locator("textarea.al-question").fill("What is 17 * 23?")
    panel.locator("button.al-run").click()
    panel.locator("button.al-next").wait_for(timeout=60000)
    note = panel.locator(".al-pace-next")
    before = note.inner_text()  # "Next: prefill", in Chinese
    panel.locator("button.al-next").click()
    expect(note).not_to_have_text(before, timeout=60000)  # waiting before the first token now
    panel.locator("button.al-stop").click()
    end = panel.locator(".al-turn").last.locator(".al-run-end")
    end.wait_for(timeout=60000)
    assert "user_stopped" in end.inner_text()

    found = page.evaluate(CUT_OFF)
    assert not found, "\n".join(found)
    assert not wrong, "\n".join(wrong)
    page.close()
