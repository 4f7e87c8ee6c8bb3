"""A run to study, not only to watch (issue 47, point 9), in Debian's Chromium against the real demo server on the
embedded default model: the live form offers the pace before Run; step by step the run waits before the
prefill and each token until Next (the keyboard's or a click) and says what comes next, and Stop pressed while
it waits ends the run with user_stopped; slow lets Stop land while the model writes; pi's own models are
offered full speed only, and the form says why; a replay, plain or in a live panel's recorded tab, goes one
stage per Next at that pace. On main there was no pace: a sub-second run left no time to press Stop, and
chapter 14's "press Stop while the model writes" could not be done."""

from __future__ import annotations

import pytest

from agentloop.harnesses.settings import SLOW_S
from tests.conftest import chapter_url, demo_server, force_answers, live_panel, static_site

LONG = " ".join(
    ["counting"] * 40
)  # a forced answer of some 40 tokens: Stop lands long before its end
VIEW = {"width": 1280, "height": 2000}


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu", allow_forced=True) as srv:
        yield srv


@pytest.fixture(autouse=True)
def pages_closed(browser):
    """Each test's pages are closed after it, passed or failed: a page left open keeps its run paused, and with it
    the server's model, and the next test's run would wait behind it."""
    before = set(browser.contexts)
    yield
    for context in set(browser.contexts) - before:
        context.close()


def tokens(scope):
    return scope.locator(".al-stream .al-tok")


def said(scope, text: str, timeout: float = 60000) -> None:
    """Wait until the note beside Next says `text`."""
    scope.locator(".al-pace-next", has_text=text).wait_for(timeout=timeout)


def test_step_by_step_the_run_waits_for_next_and_stop_ends_a_wait(server, browser):
    page = browser.new_page(viewport=VIEW)
    sent: list[dict] = []
    force_answers(page, LONG, sent=sent)
    panel = live_panel(page, chapter_url(server.url, "01"))
    choice = panel.locator(".al-form .al-pace")
    assert choice.is_visible()  # in view before Run, not folded into the settings
    assert [o.strip() for o in choice.locator("label").all_inner_texts()] == [
        "Full speed",
        "Slow",
        "Step by step",
    ]
    choice.locator("input[value=step]").check()
    assert "Step by step" in panel.locator(".al-form-settings-line").inner_text()
    panel.locator("button.al-run").click()

    said(panel, "Next: prefill", timeout=120000)
    assert panel.locator(".al-prefill").count() == 0
    # Next took the focus from Run: the keyboard steps the run.
    assert page.evaluate("document.activeElement.classList.contains('al-next')")
    page.keyboard.press("Enter")
    # The note changes at the `paused` event; the stage before it is drawn at the next frame (render.js batches a
    # frame's events), so each check waits for that drawing, then finds nothing past it.
    said(panel, "Next: token 1")
    panel.locator(".al-prefill").wait_for()
    assert panel.locator(".al-prefill").count() == 1 and tokens(panel).count() == 0
    page.keyboard.press("Enter")
    said(panel, "Next: token 2")
    tokens(panel).nth(0).wait_for()
    assert tokens(panel).count() == 1
    panel.locator("button.al-next").click()
    said(panel, "Next: token 3")
    tokens(panel).nth(1).wait_for()
    assert tokens(panel).count() == 2

    panel.locator("button.al-stop").click()  # while the run waits for Next
    panel.locator(".al-run-end").wait_for(timeout=60000)
    assert "user_stopped" in panel.locator(".al-run-end").inner_text()
    assert "user_stopped" in panel.locator(".al-model-end").inner_text()
    assert tokens(panel).count() == 2  # the token it waited before was never made
    assert panel.locator(".al-step-controls").is_hidden()
    assert sent[0]["pace"] == "step"

    # Remembered with the other settings on this page.
    panel = live_panel(page, chapter_url(server.url, "01"))
    assert panel.locator(".al-form .al-pace input[value=step]").is_checked()
    page.close()


def test_slow_lets_stop_land_while_the_model_writes(server, browser):
    """Chapter 14's exercise: Stop pressed while the model writes ends the step before its next token."""
    page = browser.new_page(viewport=VIEW)
    force_answers(page, LONG)
    page.goto(chapter_url(server.url, "14"))
    page.locator(".tabbed-labels label", has_text="max_steps").click()  # its panel draws the tokens
    panel = page.locator(".agentloop-panel").nth(1)
    panel.locator("button.al-run").wait_for(timeout=30000)
    panel.locator(".al-form .al-pace input[value=slow]").check()
    panel.locator("textarea").fill("Count to forty.")
    panel.locator("button.al-run").click()
    tokens(panel).nth(2).wait_for(timeout=120000)
    panel.locator("button.al-stop").click()
    panel.locator(".al-run-end").wait_for(timeout=60000)
    assert "user_stopped" in panel.locator(".al-run-end").inner_text()
    assert "user_stopped" in panel.locator(".al-model-end").inner_text()
    assert 3 <= tokens(panel).count() < 40
    page.close()


def test_pis_own_models_are_offered_full_speed_only_and_the_form_says_why(server, browser):
    page = browser.new_page(viewport=VIEW)
    panel = live_panel(page, chapter_url(server.url, "01"))
    pace = panel.locator(".al-form .al-pace")
    pace.locator("input[value=step]").check()
    panel.locator(".al-form-settings > summary").click()
    panel.locator("select.al-harness-select").select_option("pi")
    # One of pi's own models, as GET /api/pi/models lists them where pi has credentials (none here).
    panel.locator("select.al-pi-model-select").evaluate(
        "s => s.append(new Option('A model of pi\\'s', 'provider/model'))"
    )
    panel.locator("select.al-pi-model-select").select_option("provider/model")
    assert pace.locator("input[value=full]").is_checked()
    assert pace.locator("input[value=step]").is_disabled()
    assert "stream text, not tokens" in pace.inner_text()
    panel.locator("select.al-pi-model-select").select_option("")  # this page's model: paced again
    assert pace.locator("input[value=step]").is_checked() and "stream text" not in pace.inner_text()
    page.close()


def step_through_a_replay(scope) -> None:
    """At pace step, the replay in `scope` (a panel, or its recorded side) draws one stage per Next."""
    scope.locator("button.al-play").wait_for(timeout=30000)
    scope.locator(".al-pace input[value=step]").check()
    next_button = scope.locator("button.al-play")
    assert next_button.inner_text() == "Next"
    next_button.click()  # the run's start, its first step and context, up to the prefill
    said(scope, "Next: prefill", timeout=10000)
    assert scope.locator(".al-prefill").count() == 0
    next_button.click()
    said(scope, "Next: token 1", timeout=10000)
    assert scope.locator(".al-prefill").count() == 1 and tokens(scope).count() == 0
    next_button.click()
    said(scope, "Next: token 2", timeout=10000)
    assert tokens(scope).count() == 1
    scope.locator("button.al-stepbtn").click()  # Step still draws one event
    assert tokens(scope).count() == 2


def test_a_replay_goes_one_stage_per_next_step_by_step_and_a_token_at_a_time_when_slow(
    site, server, browser
):
    with static_site(site) as url:
        page = browser.new_page(viewport=VIEW)
        page.goto(chapter_url(url, "01"))
        panel = page.locator(".agentloop-panel").first
        step_through_a_replay(panel)
        # Slow: each token waits as long as a live slow run's (pace.js's SLOW_MS is settings.SLOW_S).
        panel.locator(".al-pace input[value=slow]").check()
        waits = panel.evaluate(
            """root => {
              const player = root._alPanel.replay;
              return player.events.map((ev, i) => [ev.type, player.delayBefore(i)]);
            }"""
        )
        assert {ms for kind, ms in waits if kind == "token"} == {SLOW_S * 1000}
        assert panel.locator("button.al-play").inner_text() == "Play"
        page.close()
    # The same in a live panel's recorded tab.
    page = browser.new_page(viewport=VIEW)
    panel = live_panel(page, chapter_url(server.url, "01"))
    panel.locator("button.al-live-tab[data-tab=recorded]").click()
    step_through_a_replay(panel.locator(".al-recorded"))
    page.close()
