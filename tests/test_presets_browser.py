"""Each chapter's live preset and "Try this" show what the chapter says they show (issue 47, point 8), in Debian's
Chromium against the real demo server on the trained default model, nothing forced: chapter 7's preset answers a
question about an attached photo; chapter 12's "Try this" makes the model's own call unreadable; chapter 14's
four tabs each end the run the way the tab is named; chapter 10's loads agent-gemma4 and runs with MTP on.

A reader answers each permission the way chapter 1 shows (Approve), except where the tab is about not answering.
"""

from __future__ import annotations

import pytest

from tests.conftest import chapter_url, demo_server

PHOTO = "docs/chapters/runs/media/photo.jpg"


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


def open_tab(page, url: str, tab: str | None):
    """The live panel of `url` (under the content tab labelled `tab`), once its form is drawn."""
    page.goto(url)
    if tab:
        page.locator(".tabbed-labels > label", has_text=tab).first.click()
    panel = page.locator(".agentloop-panel:visible").first
    panel.locator("button.al-run").wait_for(timeout=60000)
    return panel


def run_to_the_end(panel, approve: bool = True) -> str:
    """Press Run, approve each call as it is asked (unless not `approve`), and return the run's end line."""
    panel.locator("button.al-run").click()
    end = panel.locator(".al-run-end").last
    waiting = panel.locator(
        ".al-permission:not(.al-approved):not(.al-denied):not(.al-unanswered) .al-approve"
    )
    while not end.is_visible():
        if approve and waiting.count():
            waiting.first.click()
        panel.page.wait_for_timeout(200)
    return end.inner_text()


def try_this(panel) -> None:
    panel.locator("button.al-try").click()


def test_chapter_7s_preset_answers_a_question_about_the_attached_photo(server, browser):
    """On main the preset (1 step, 24 tokens, no tools) cut the model's first call and never answered."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = open_tab(page, chapter_url(server.url, "07"), "a photo")
    panel.locator(".al-attach input[type=file]").set_input_files(PHOTO)
    end = run_to_the_end(panel)
    assert "final" in end and panel.locator(".al-final").inner_text().strip()
    panel.locator("button.al-tab[data-tab=context]").last.click()
    assert "<|image_pad|>" in panel.locator(".al-context-text").last.inner_text()


def test_chapter_12s_try_this_makes_the_models_own_call_a_format_error(server, browser):
    """On main the live panel answered right and showed no format error."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(chapter_url(server.url, "12"))
    page.locator(".tabbed-labels > label", has_text="Qwen3.5").last.click()  # the format-error tabs
    panel = page.locator(".agentloop-panel:visible", has=page.locator("button.al-try")).first
    panel.locator("button.al-run").wait_for(timeout=60000)
    try_this(panel)
    run_to_the_end(panel)
    assert panel.locator(".al-tool-call.al-is-error").count() >= 1
    assert "max_new_tokens" in panel.locator(".al-step").first.inner_text()


@pytest.mark.parametrize(
    "tab, ends",
    [("max_steps", "max_steps"), ("format_errors", "format_errors"), ("max_new_tokens", "final")],
)
def test_chapter_14s_try_this_ends_the_run_the_way_its_tab_is_named(server, browser, tab, ends):
    """On main the live tabs (forced recordings of tiny models) all answered in two steps and ended `final`,
    and the max_new_tokens tab's "Try this" set 64 tokens, which cut nothing."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = open_tab(page, chapter_url(server.url, "14"), tab)
    try_this(panel)
    end = run_to_the_end(panel)
    assert ends in end
    if tab == "max_new_tokens":  # the call was cut, and the parser said so
        assert "max_new_tokens" in panel.locator(".al-step").first.inner_text()
        assert panel.locator(".al-tool-call.al-is-error").count() >= 1


def test_chapter_14s_time_limit_tab_ends_a_wait_for_permission(server, browser):
    """On main the form had no time limit field: the live tab's run never met its limit."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = open_tab(page, chapter_url(server.url, "14"), "time_limit")
    try_this(panel)
    assert "Time limit" in panel.locator(".al-try-text").inner_text()
    end = run_to_the_end(panel, approve=False)
    assert "time_limit" in end
    assert panel.locator(".al-permission.al-unanswered").count() == 1


def test_chapter_10s_try_this_loads_the_drafters_model_and_runs_with_mtp(server, browser):
    """On main "Try this" turned MTP off in the MTP chapter (and the default model has no drafter)."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = open_tab(page, chapter_url(server.url, "10"), None)
    try_this(panel)
    # Loaded: the MTP switch is offered (the status says the model has a drafter), and on, as "try this" set it.
    panel.locator(".al-form-settings-line", has_text="MTP").wait_for(timeout=120000)
    assert panel.locator("input[name=mtp]").is_checked()
    assert "agent-gemma4" in panel.locator(".al-status").inner_text()
    end = run_to_the_end(panel)
    assert "final" in end
    # tokens a drafter guessed and the model kept
    assert panel.locator(".al-tok.al-drafted").count() > 0
