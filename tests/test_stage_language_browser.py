"""Issue 47, 6: a language switch keeps what the reader did in the stage panels, in Debian's Chromium on the built
book, live against the real demo server (its embedded default model) and replaying on a static host.

On main a switch destroyed every stage panel and built it again: chapter 4's typed text went back to the
chapter's, its tokens were asked for again (and an answer still coming was drawn into a panel no longer shown),
the example chosen went back to the first; chapter 9's sliders went back to the chapter's settings, the model
chosen to the first and the draws were gone; every recording was fetched again. Now each stage redraws its words
in place, as the loop panels do: the words change language, what the reader did stays, nothing is asked again.

Every test also holds that the page threw nothing and no request failed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import chapter_url, demo_server, static_site

LIVE_S = 60000  # ms: the server's answers on two shared cores


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


@pytest.fixture(scope="module")
def static(site):
    with static_site(site) as base:
        yield base


@pytest.fixture
def page(browser):
    """A page of its own (its own localStorage: English first), whose errors, failed requests and requests are
    kept: `page.problems`, `page.asked` (every URL asked, in order)."""
    pg = browser.new_page(viewport={"width": 1280, "height": 1600})
    problems: list[str] = []
    asked: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    pg.on(
        "response",
        lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
    )
    pg.on("request", lambda r: asked.append(r.url))
    pg.problems, pg.asked = problems, asked
    yield pg
    found = list(problems)  # before closing, which cuts the live panels' requests short
    pg.close()
    assert not found, found


def asked(page, part: str) -> int:
    """How many requests so far had `part` in their URL."""
    return sum(part in url for url in page.asked)


def switch(stage, lang: str) -> None:
    """The reader's switch: the select in the stage panel's own top line."""
    stage.locator("select.al-lang").select_option(lang)


def token_ids(box) -> list[int]:
    return box.locator(".als-tok").evaluate_all("(all) => all.map((e) => Number(e.dataset.id))")


def pressed(box, selector: str) -> list[str]:
    """The aria-pressed of each button `selector` in `box`, in order."""
    return box.locator(selector).evaluate_all(
        "(all) => all.map((b) => b.getAttribute('aria-pressed'))"
    )


def shown(text: str) -> str:
    """A text as the tokens panel shows it (stages/stage.js visible()), for texts whose only whitespace is
    spaces."""
    return text.replace(" ", "␣")


# -- chapter 4: tokens ------------------------------------------------------------------------------------------------


def test_live_tokens_keep_the_typed_text_its_tokens_and_the_example(server, page):
    page.goto(chapter_url(server.url, "04"))
    stage = page.locator(".als-stage-tokens")
    live = stage.locator(".als-live-box")
    live.locator(".als-column").wait_for(timeout=LIVE_S)  # the chapter's text, tokenized at once
    text = "Tokens of 寿司 and 🍣, typed here"
    live.locator("textarea").fill(text)
    live.locator("button.als-go").click()
    expect(live.locator(".als-source-text")).to_have_text(shown(text), timeout=LIVE_S)
    tokens = token_ids(live)
    assert tokens
    recorded = stage.locator(".als-recorded")
    recorded.locator(".als-example-btn").nth(2).click()
    example = token_ids(recorded)
    chosen = pressed(recorded, ".als-example-btn")
    assert chosen[2] == "true"
    tokenized = asked(page, "/api/tokenize")

    switch(stage, "zh-Hant")
    expect(live.locator("button.als-go")).to_have_text("分詞")
    assert live.locator("label span").first.inner_text() == "文字"
    assert live.locator("textarea").input_value() == text
    assert live.locator(".als-source-text").inner_text() == shown(text)
    assert token_ids(live) == tokens
    assert "個 token" in live.locator(".als-col-title").inner_text()
    assert pressed(recorded, ".als-example-btn") == chosen and token_ids(recorded) == example
    assert recorded.locator(".als-heading").inner_text() == "用迷你分詞器錄下的"
    assert stage.locator(".als-status").inner_text().startswith("即時：")
    assert stage.locator(".als-badge").inner_text() == "即時"

    switch(stage, "en")
    expect(live.locator("button.als-go")).to_have_text("Tokenize")
    assert live.locator("textarea").input_value() == text
    assert token_ids(live) == tokens and "tokens" in live.locator(".als-col-title").inner_text()
    assert pressed(recorded, ".als-example-btn") == chosen and token_ids(recorded) == example
    assert asked(page, "/api/tokenize") == tokenized  # the answer is kept, not asked again


def test_a_tokenize_pending_at_a_switch_is_drawn_once_in_the_new_language(server, page):
    page.goto(chapter_url(server.url, "04"))
    stage = page.locator(".als-stage-tokens")
    live = stage.locator(".als-live-box")
    live.locator(".als-column").wait_for(timeout=LIVE_S)
    held = []

    def hold(route):  # each request waits until the test lets it go
        held.append(route)

    page.route("**/api/tokenize", hold)
    text = "Asked before the switch"
    live.locator("textarea").fill(text)
    live.locator("button.als-go").click()
    for _ in range(200):  # the request on its way to the route (a wait, not a measured time)
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1

    switch(stage, "zh-Hant")
    expect(live.locator("button.als-go")).to_have_text("分詞")
    assert live.locator("button.als-go").is_disabled()  # still asking
    assert live.locator("textarea").input_value() == text
    held[0].continue_()
    expect(live.locator(".als-source-text")).to_have_text(shown(text), timeout=LIVE_S)
    expect(live.locator("button.als-go")).to_be_enabled()
    assert live.locator(".als-columns").count() == 1
    assert "個 token" in live.locator(".als-col-title").inner_text()
    assert len(held) == 1  # asked once, by the reader's click only
    page.unroute("**/api/tokenize", hold)


def test_replayed_tokens_keep_the_chosen_example(static, page):
    page.goto(chapter_url(static, "04"))
    stage = page.locator(".als-stage-tokens")
    stage.locator(".als-column").first.wait_for()
    buttons = stage.locator(".als-example-btn")
    buttons.nth(3).click()
    example = token_ids(stage)
    chosen = pressed(stage, ".als-example-btn")
    assert chosen[3] == "true"
    fetched = asked(page, "/runs/ch04-")

    switch(stage, "zh-Hant")
    expect(stage.locator(".als-status")).to_have_text("已載入 10 個錄製檔。")
    assert stage.locator(".als-badge").inner_text() == "重播"
    assert stage.locator(".als-examples").get_attribute("aria-label") == "範例文字"
    assert pressed(stage, ".als-example-btn") == chosen and token_ids(stage) == example
    assert "個 token" in stage.locator(".als-col-title").first.inner_text()

    switch(stage, "en")
    expect(stage.locator(".als-status")).to_have_text("10 recordings loaded.")
    assert pressed(stage, ".als-example-btn") == chosen and token_ids(stage) == example
    assert asked(page, "/runs/ch04-") == fetched  # the recordings are kept, not fetched again


# -- chapter 9: sampling ----------------------------------------------------------------------------------------------

# What the reader set and drew, as the panel shows it: the sliders, the chosen distribution, the kept count,
# each row's id, kept, p_kept and draws, the row drawn.
SAMPLING_STATE = """(stage) => ({
    sliders: Array.from(stage.querySelectorAll("input.als-slider")).map((i) => i.value),
    shown: Array.from(stage.querySelectorAll("output.als-out")).map((o) => o.textContent),
    chosen: Array.from(stage.querySelectorAll("button.als-choice")).map((b) => b.getAttribute("aria-pressed")),
    kept: stage.dataset.kept,
    rows: Array.from(stage.querySelectorAll("tr.als-row")).map((tr) =>
        [tr.dataset.id, tr.dataset.kept, tr.dataset.pKept, tr.lastElementChild.textContent]),
    drawn: Array.from(stage.querySelectorAll("tr.als-chosen")).map((tr) => tr.dataset.id),
})"""


def set_slider(stage, name: str, value) -> None:
    """Move a slider as a reader would (its input event)."""
    stage.locator(f"input.{name}").evaluate(
        """(input, value) => {
            input.value = String(value);
            input.dispatchEvent(new Event("input", { bubbles: true }));
        }""",
        value,
    )


def set_and_draw(stage) -> dict:
    """Sliders away from the chapter's settings, 1,000 draws; the panel's state."""
    set_slider(stage, "als-temperature", 0.7)
    set_slider(stage, "als-topK", 12)
    set_slider(stage, "als-topP", 0.9)
    stage.locator("button.als-draw-many").click()
    state = stage.evaluate(SAMPLING_STATE)
    assert state["sliders"] == ["0.7", "12", "0.9"] and state["drawn"]
    assert sum(int(r[3].split()[0]) for r in state["rows"] if r[3]) == 1000
    return state


def test_live_sampling_keeps_the_sliders_the_model_and_the_draws(server, page):
    page.goto(chapter_url(server.url, "09"))
    stage = page.locator(".als-stage-sampling")
    stage.locator("tr.als-row").first.wait_for(timeout=LIVE_S)
    stage.locator("button.als-ask").click()  # the loaded model's own distribution, a third choice
    choices = stage.locator("button.als-choice")
    expect(choices).to_have_count(3, timeout=LIVE_S)
    assert choices.nth(2).inner_text().endswith(" (live)")
    choices.nth(1).click()  # the other recorded model
    state = set_and_draw(stage)
    assert state["chosen"] == ["false", "true", "false"]
    next_tokens = asked(page, "/api/next-token")

    switch(stage, "zh-Hant")
    expect(stage.locator("th").first).to_have_text("名次")
    assert stage.evaluate(SAMPLING_STATE) == state
    assert choices.nth(2).inner_text().endswith("（即時）")
    assert stage.locator("button.als-draw-many").inner_text() == "抽 1,000 次"
    assert stage.locator("button.als-check").inner_text() == "在伺服器上檢查這些設定"
    assert stage.locator(".als-live-box .als-k").inner_text() != ""  # what the ask said, in Chinese
    assert "保留 " in stage.locator(".als-kept-count").inner_text()
    assert stage.locator(".als-status").inner_text().startswith("即時：")

    switch(stage, "en")
    expect(stage.locator("th").first).to_have_text("rank")
    assert stage.evaluate(SAMPLING_STATE) == state
    assert choices.nth(2).inner_text().endswith(" (live)")
    choices.nth(2).click()  # the live distribution is still there to choose, not asked again
    assert stage.locator("tr.als-row").count() == 50
    assert asked(page, "/api/next-token") == next_tokens


def test_replayed_sampling_keeps_the_sliders_the_model_and_the_draws(static, page):
    page.goto(chapter_url(static, "09"))
    stage = page.locator(".als-stage-sampling")
    stage.locator("tr.als-row").first.wait_for()
    stage.locator("button.als-choice").nth(1).click()
    state = set_and_draw(stage)
    assert state["chosen"] == ["false", "true"]
    fetched = asked(page, "/runs/ch09-next-token")

    switch(stage, "zh-Hant")
    expect(stage.locator("th").first).to_have_text("名次")
    assert stage.evaluate(SAMPLING_STATE) == state
    assert stage.locator("label.als-field span").first.inner_text() == "溫度"
    assert stage.locator(".als-status").inner_text() == "已載入 2 個錄製檔。"

    switch(stage, "en")
    expect(stage.locator("th").first).to_have_text("rank")
    assert stage.evaluate(SAMPLING_STATE) == state
    assert asked(page, "/runs/ch09-next-token") == fetched


# -- chapter 3: the reader picks nothing; the tables are redrawn, not fetched again ----------------------------------


def test_replayed_model_tables_are_redrawn_without_fetching_again(static, page):
    page.goto(chapter_url(static, "03"))
    specs = page.locator(".als-stage-specs")
    menu = page.locator(".als-stage-models")
    specs.locator("table").wait_for()
    menu.locator("table").wait_for()
    columns = specs.locator("thead th").all_inner_texts()
    rows = menu.locator("tbody tr").all_inner_texts()
    fetched = asked(page, "/runs/ch03-")

    switch(specs, "zh-Hant")
    expect(specs.locator("thead th").last).to_have_text("來源")
    assert specs.locator("thead th").all_inner_texts()[:-1] == columns[:-1]
    assert menu.locator("thead th").first.inner_text() == "模型"
    assert len(menu.locator("tbody tr").all_inner_texts()) == len(rows)
    assert asked(page, "/runs/ch03-") == fetched


def test_live_model_tables_are_redrawn_without_asking_again(server, page):
    """Chapter 3 has no loop panel: every /api/status and /api/models the page asks is the stage panels'."""
    page.goto(chapter_url(server.url, "03"))
    specs = page.locator(".als-stage-specs")
    menu = page.locator(".als-stage-models")
    expect(specs.locator("thead th").nth(1)).to_contain_text(" (live)", timeout=LIVE_S)
    expect(menu.locator(".als-status")).to_contain_text("models/", timeout=LIVE_S)
    rows = menu.locator("tbody tr").count()
    status, models = asked(page, "/api/status"), asked(page, "/api/models")

    switch(menu, "zh-Hant")
    expect(specs.locator("thead th").nth(1)).to_contain_text("（即時）")
    assert specs.locator("thead th").last.inner_text() == "來源"
    assert menu.locator("thead th").first.inner_text() == "模型"
    assert menu.locator(".als-status").inner_text().startswith("即時：")
    assert menu.locator("tbody tr").count() == rows
    assert asked(page, "/api/status") == status and asked(page, "/api/models") == models
