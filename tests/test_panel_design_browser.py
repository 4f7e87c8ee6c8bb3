"""The live panel's two languages and its design (issue 12), in Debian's Chromium against the real demo
server on the trained toys, and replays on a static server: the language switch (this page's panels,
remembered as agentloop.lang, everything drawn again, the server's errors in the reader's language, the shipped CJK
font), the model's examples beside the question box, settings folded to one line, a step as a
timeline, the context bar by role, a token's top 5 as bars, MTP rounds, call ids as words, a replay's
question as the reader's turn, chapter 13's forced tokens and the chapters' try-this controls."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from demo_server.client import Client
from demo_server.zh_hans import with_zh_hans
from tests.conftest import chapter_url, demo_server, english, static_site

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
RUNS = ROOT / "docs" / "chapters" / "runs"
# Words a Chinese panel may still show in Latin letters: names of things (models, tools, the
# harness, HTTP), units, and the sampling parameters' own names.
LATIN_NAMES = {
    "token", "tok", "ms", "MTP", "Top", "top", "Hub", "Hugging", "Face", "Python", "CPU", "RPC",
    "agentloop", "simple", "transformers", "vLLM", "pi", "logprob", "p_sampled", "id", "code",
    "run_python", "list_files", "read_file", "Qwen3", "Gemma", "English", "JSON", "Lines", "HTTP",
    "GET", "POST", "data", "replay", "make", "serve", "site", "open", "models",
}  # fmt: skip


@pytest.fixture(scope="module")
def static(site):
    with static_site(site) as url:
        yield url


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu") as srv:
        yield srv


def open_page(browser, url: str, lang: str = "en", height: int = 1400):
    page = browser.new_page(viewport={"width": 1280, "height": height})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    # The page of edition `lang`: its panels start in its language.
    page.goto(url.replace("/chapters/", "/zh-Hant/chapters/", 1) if lang == "zh-Hant" else url)
    page.problems = problems
    return page


def latin_words(panel) -> set[str]:
    """The words in Latin letters a panel shows as its own, not as data: values, code, tokens, the
    reader's question, model ids, the run's settings (RunSettings' own field names) and the examples
    (English questions for an English-only toy) left out."""
    text = panel.evaluate(
        """(p) => {
            const copy = p.cloneNode(true);
            const data = 'code, pre, .al-v, .al-stream, .al-asked-text, .al-final, .al-example,'
              + ' .al-src, .al-guess, .al-lang, option, .al-model-name, .al-try-text, .al-arg-name,'
              + ' .al-error-text, .al-model-desc-text, .al-model-facts, .al-tools label, textarea,'
              + ' .al-pbar-piece, .al-example-kind-name, .al-badge, .al-settings .al-run .al-k';
            for (const e of copy.querySelectorAll(data)) e.remove();
            const walk = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
            const parts = [];
            while (walk.nextNode()) parts.push(walk.currentNode.textContent);
            return parts.join(' ');
        }"""
    )
    words = set(re.findall(r"[A-Za-z][A-Za-z_0-9]{2,}", text))
    return {
        w
        for w in words
        if w not in LATIN_NAMES and not w.startswith(("qwen", "gemma", "agent", "tiny"))
    }


def run_live(panel, question: str | None = None, auto: bool = True):
    if question is not None:
        panel.locator("textarea.al-question").fill(question)
    panel.locator(".al-form-settings > summary").click()
    box = panel.locator("input[name=auto_approve]")
    box.check() if auto else box.uncheck()
    panel.locator(".al-form-settings > summary").click()
    panel.locator("button.al-run").click()


def test_the_switch_draws_a_replay_again_in_chinese_and_is_remembered(static, browser):
    page = open_page(browser, chapter_url(static, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-all").click()
    panel.locator(".al-run-end").wait_for()
    assert "Run ended" in panel.inner_text()
    panel.locator("select.al-lang").select_option("zh-Hant")
    panel.locator(".al-run-end").wait_for()
    text = panel.inner_text()
    assert "執行結束" in text and "最終答案" in text and "Run ended" not in text
    # Drawn again to where it was: every event, the same tokens.
    n_tokens = sum(json.loads(line)["type"] == "token" for line in (RUNS / "chapter1.jsonl").open())
    assert panel.locator(".al-step .al-tok").count() == n_tokens
    assert (
        page.evaluate("localStorage.getItem('agentloop.lang')") == "zh-Hant"
    )  # the reader's choice
    assert latin_words(panel) == set()
    # The Chinese is drawn with the book's own font (this Chromium has no CJK font of its own).
    loaded = page.evaluate(
        "async () => (await document.fonts.load('16px \"agentloop CJK\"', '執行結束')).length"
    )
    assert loaded == 1
    # The select switched this page's panels, not the page: the next English page's panels start in English,
    # and the zh-Hant edition's page (where the header's switch goes) opens in Chinese, the stage panels too.
    page.goto(chapter_url(static, "04"))
    page.locator(".agentloop-stage .als-status").first.wait_for()
    assert page.locator("select.al-lang").first.input_value() == "en"
    page.goto(chapter_url(static, "04", "zh-Hant"))
    stage = page.locator(".agentloop-stage").first
    stage.locator(".als-status").wait_for()
    page.wait_for_function(  # "N recordings loaded", in Chinese: the zh-Hant page reads the one set of them
        "() => document.querySelector('.als-status').textContent.includes('已載入')", timeout=10000
    )
    assert page.locator("select.al-lang").first.input_value() == "zh-Hant"
    ARTIFACTS.mkdir(exist_ok=True)
    stage.screenshot(path=str(ARTIFACTS / "04-tokens-stage-zh.png"))
    assert not page.problems, page.problems
    page.close()


def test_a_replay_draws_its_question_as_the_readers_turn(static, browser):
    # Bug 4: a replay showed the answer without the question. run_start carries it now.
    first = json.loads((RUNS / "chapter1.jsonl").open().readline())
    assert first["type"] == "run_start" and first["question"]
    page = open_page(browser, chapter_url(static, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-stepbtn").click()
    asked = panel.locator(".al-asked")
    asked.wait_for()
    assert asked.locator(".al-asked-text").inner_text() == first["question"]
    assert asked.locator(".al-k").inner_text() == "You asked"
    panel.locator("button.al-restart").click()  # one question, however often it is replayed
    panel.locator("button.al-all").click()
    assert panel.locator(".al-asked").count() == 1
    page.close()


def test_chapter_13_marks_its_forced_tokens_and_draws_no_empty_step(static, browser):
    page = open_page(browser, chapter_url(static, "13"), height=1000)
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-all").click()
    panel.locator(".al-run-end").wait_for()
    assert panel.locator(".al-tok.al-forced").count() > 0
    assert "forced: written by the harness" in panel.locator(".al-legend").inner_text()
    for card in panel.locator(".al-step").all():
        body = card.locator(".al-step-body")
        # Every step shows what it did: its timeline and its tokens or a call.
        assert body.locator(".al-timeline").count() == 1
        assert body.locator(".al-tok, .al-tool-call, .al-tool-result").count() > 0
    page.close()


def test_each_step_is_a_timeline_and_the_context_bar_is_coloured_by_role(static, browser):
    events = [json.loads(line) for line in (RUNS / "chapter1.jsonl").open()]
    page = open_page(browser, chapter_url(static, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-all").click()
    panel.locator(".al-run-end").wait_for()
    prefill = {e["step"]: e["ms"] for e in events if e["type"] == "prefill"}
    decode = {e["step"]: e["decode_ms"] for e in events if e["type"] == "model_end"}
    tool = {e["step"]: e["ms"] for e in events if e["type"] == "tool_result"}
    totals = {s: prefill[s] + decode[s] + tool.get(s, 0) for s in prefill}
    slowest = max(totals.values())
    for i, step in enumerate(sorted(prefill)):
        line = panel.locator(".al-step").nth(i).locator(".al-timeline")

        def width(phase, line=line):
            style = line.locator(f".al-phase-{phase}").evaluate("e => e.style.width")
            return float(style.rstrip("%"))

        assert width("prefill") == pytest.approx(100 * prefill[step] / slowest, abs=0.01)
        assert width("decode") == pytest.approx(100 * decode[step] / slowest, abs=0.01)
        assert (line.locator(".al-phase-tool").count() == 1) == (step in tool)
        assert f"{round(decode[step])} ms" in line.inner_text().replace(",", "")
    # The Context tab: the last context's tokens by role, each a part of the bar.
    last = [e for e in events if e["type"] == "context"][-1]
    assert sum(last["role_tokens"].values()) == last["n_tokens"]
    panel.locator("button.al-tab[data-tab=context]").click()
    pane = panel.locator(".al-pane-context")
    for role, n in last["role_tokens"].items():
        part = pane.locator(f".al-meter .al-role-{role}")
        width = float(part.evaluate("e => e.style.width").rstrip("%"))
        assert width == pytest.approx(100 * n / last["context_length"], abs=0.01)
        assert f"{role} {n}" in pane.locator(".al-role-legend").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "chapter1-context-tab.png"))
    page.close()


def test_a_tool_call_names_its_step_and_call_in_words(static, browser):
    page = open_page(browser, chapter_url(static, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-all").click()
    call = panel.locator(".al-tool-call").first
    call.wait_for()
    assert "step 1, call 1" in call.inner_text()
    assert (
        "1.0"
        not in panel.locator(".al-tool-call, .al-permission, .al-tool-result").all_inner_texts()[0]
    )
    page.close()


def test_the_live_panel_in_chinese_runs_the_readers_question_and_shows_errors_in_chinese(
    server, browser
):
    page = open_page(browser, chapter_url(server.url, "01"), lang="zh-Hant")
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    assert panel.locator("button.al-run").inner_text() == "執行"
    assert "即時" in panel.locator(".al-status").inner_text()
    run_live(panel, "Convert 26.2 miles to km.")
    panel.locator(".al-run-end").wait_for(timeout=120000)
    text = panel.inner_text()
    assert "執行結束" in text and "42.16" in panel.locator(".al-final").inner_text()
    assert latin_words(panel) == set()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "01-one-question-live-zh.png"))
    # A request the server refuses: its error in Chinese only (the server sends both).
    panel.locator(".al-form-settings > summary").click()
    panel.locator("input[name=max_steps]").fill("0")
    panel.locator("button.al-run").click()
    error = panel.locator(".al-error").last
    error.wait_for(timeout=30000)
    said = error.locator(".al-error-text").inner_text()
    refused = Client(server.url).post("/api/runs", {"question": "x", "settings": {"max_steps": 0}})
    assert refused.status_code == 422
    message = refused.json()["message"]
    assert said == message["zh"] != message["en"] and message["en"] not in error.inner_text()
    assert error.locator(".al-title").inner_text() == "錯誤"
    assert not page.problems, page.problems
    page.close()


def test_a_switch_mid_conversation_draws_its_turns_again_and_the_next_question_follows_up(
    server, browser
):
    page = open_page(browser, chapter_url(server.url, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    run_live(panel, "What is 48213 * 9127?")
    panel.locator(".al-run-end").wait_for(timeout=120000)
    final = panel.locator(".al-final").inner_text()
    panel.locator("select.al-lang").select_option("zh-Hant")
    panel.locator(".al-run-end").wait_for()
    # The same turn, drawn again in Chinese: the question, the steps and the answer.
    assert panel.locator(".al-turn").count() == 1
    assert panel.locator(".al-asked-text").inner_text() == "What is 48213 * 9127?"
    assert panel.locator(".al-final").inner_text() == final and "執行結束" in panel.inner_text()
    assert panel.locator("button.al-new-conversation").is_enabled()
    # The conversation goes on: the next question is its second turn.
    panel.locator("textarea.al-question").fill("How many r's are in the word strawberry?")
    panel.locator("button.al-run").click()
    page.wait_for_function(
        "() => document.querySelectorAll('.agentloop-panel .al-run-end').length === 2",
        timeout=120000,
    )
    assert panel.locator(".al-turn").count() == 2
    assert not page.problems, page.problems
    page.close()


def test_the_model_is_said_and_its_examples_fill_the_question_box(server, browser):
    examples = json.loads((ROOT / "models" / "agent-qwen3_5" / "examples.json").read_text())
    # As the file has it, each {en, zh} with the zh-Hans the server adds (demo_server/zh_hans.py).
    assert Client(server.url).status()["examples"] == with_zh_hans(examples)
    page = open_page(browser, chapter_url(server.url, "05"))
    panel = page.locator(".agentloop-panel").first
    note = panel.locator(".al-examples-note")
    note.wait_for(timeout=30000)
    assert "toy trained for this book" in note.inner_text()
    buttons = panel.locator("button.al-example")
    assert buttons.count() == len(examples["questions"])
    kinds = {q["kind"] for q in examples["questions"]}
    assert {b.get_attribute("data-kind") for b in buttons.all()} == kinds
    buttons.nth(3).click()
    assert panel.locator("textarea.al-question").input_value() == examples["questions"][3]["en"]
    # In Chinese the note is the Chinese one (the questions stay as the toy understands them).
    panel.locator("select.al-lang").select_option("zh-Hant")
    page.wait_for_function(
        "(t) => document.querySelector('.al-examples-note').textContent === t",
        arg=examples["note"]["zh"],
        timeout=10000,
    )
    page.close()


def test_a_readers_own_question_and_an_example_are_answered_in_chapter_1(server, browser):
    # As issue 17's reader tried the first panel: a question in their own words, then, in a new conversation, an
    # example the panel offers; greedy (chapter 1's recorded settings), the answer states what the tool printed.
    page = open_page(browser, chapter_url(server.url, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    page.wait_for_function(
        "() => document.querySelector('.al-form input[name=max_new_tokens]').value === '128'",
        timeout=20000,
    )
    assert panel.locator("input[name=temperature]").input_value() == "0"
    run_live(panel, "whats 12 times 12")
    panel.locator(".al-run-end").wait_for(timeout=180000)
    assert "144" in panel.locator(".al-final").last.inner_text()
    panel.locator("button.al-new-conversation").click()
    example = panel.locator("button.al-example[data-kind=letters]").first
    asked = example.inner_text()
    example.click()
    assert panel.locator("textarea.al-question").input_value() == asked
    expect = next(
        q["expect"]
        for q in json.loads((ROOT / "models" / "agent-qwen3_5" / "examples.json").read_text())[
            "questions"
        ]
        if q["en"] == asked
    )
    run_live(panel)
    panel.locator(".al-run-end").wait_for(timeout=180000)
    assert expect in panel.locator(".al-final").last.inner_text()
    page.close()


def test_settings_fold_to_one_line_and_try_this_fills_the_form(server, browser):
    page = open_page(browser, chapter_url(server.url, "09"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    folded = panel.locator("details.al-form-settings")
    assert folded.get_attribute("open") is None
    assert panel.locator("input[name=temperature]").is_hidden()
    # The closed line names the sampling the recording beside it used (ch09-run.spec.json).
    page.wait_for_function(
        "() => document.querySelector('.al-form-settings-line').textContent.includes('Temperature 1')",
        timeout=20000,
    )
    box = panel.locator(".al-form-settings-line").bounding_box()
    assert box["height"] < 40  # one line
    # Try this: chapter 9's control fills the question and greedy settings.
    spec = json.loads(panel.get_attribute("data-try"))
    panel.locator("button.al-try").click()
    assert panel.locator("textarea.al-question").input_value() == spec["question"]
    assert "Temperature 0" in panel.locator(".al-form-settings-line").inner_text()
    panel.locator(".al-form-settings > summary").click()
    assert panel.locator("input[name=temperature]").input_value() == "0"
    assert panel.locator("input[name=top_k]").input_value() == "0"
    page.close()


CHAPTERS = [p.stem for p in english((ROOT / "docs" / "chapters").glob("[0-9][0-9]-*.md"))]
OVERFLOW = """() => [...document.querySelectorAll('.agentloop-panel, .agentloop-stage')]
    .filter((p) => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 1)
    .map((p) => `${p.className}: ${p.scrollWidth} > ${p.clientWidth}`)"""


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_chapters_panels_live_in_both_languages_and_schemes(server, browser, stem):
    # Each chapter as a reader meets it live: its first loop panel runs its own question (or the
    # toy's first example), then every panel is photographed in English and Chinese, light and
    # dark, and none overflows the column at 1280 px.
    page = open_page(browser, f"{server.url}/chapters/{stem}/", height=1000)
    panels = [p for p in page.locator(".agentloop-panel, .agentloop-stage").all() if p.is_visible()]
    if not panels:
        pytest.skip(f"{stem} has no panel")
    loop = [p for p in panels if "agentloop-panel" in (p.get_attribute("class") or "")]
    if loop and loop[0].get_attribute("data-harness") != "pi":
        panel = loop[0]
        panel.locator("button.al-run").wait_for(timeout=30000)
        question = (
            panel.get_attribute("data-question")
            or panel.locator("button.al-example").first.inner_text()
        )
        run_live(panel, question)
        panel.locator(".al-run-end").wait_for(timeout=180000)
    page.wait_for_timeout(300)
    ARTIFACTS.mkdir(exist_ok=True)
    page.add_style_tag(content=".md-header { display: none; }")  # it would cover tall panels' shots
    page.mouse.move(0, 0)  # no token hovered: no popover in the shots
    for lang in ("en", "zh-Hant"):
        if lang != "en":
            page.locator("select.al-lang").first.select_option(lang)
            page.wait_for_timeout(500)
        assert page.evaluate(OVERFLOW) == []
        for scheme, name in (("default", "light"), ("slate", "dark")):
            page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)", scheme)
            for i, p in enumerate(panels):
                if p.is_visible():
                    p.screenshot(path=str(ARTIFACTS / f"{stem}-live-{i + 1}-{lang}-{name}.png"))
    if loop and loop[0].get_attribute("data-harness") != "pi":
        assert latin_words(loop[0]) == set()
    assert not page.problems, page.problems
    page.close()


def test_mtp_rounds_show_what_was_guessed_kept_and_turned_down(server, browser):
    c = Client(server.url)
    assert c.post("/api/models/load", {"model": "agent-gemma4"}).status_code == 202
    assert c.wait_ready(300)["model"] == "agent-gemma4"
    page = open_page(browser, chapter_url(server.url, "10"), height=2400)
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    panel.locator(".al-form-settings > summary").click()
    panel.locator("input[name=mtp]").wait_for(state="visible", timeout=20000)
    panel.locator("input[name=mtp]").check()
    panel.locator("input[name=temperature]").fill("0")
    # Folded again for run_live, which opens the settings to tick auto-approve: a live form now starts
    # without it (issue 47), so the tick is a real click on a field that must be shown.
    panel.locator(".al-form-settings > summary").click()
    run_live(panel, "What is 48213 * 9127?")
    panel.locator(".al-run-end").wait_for(timeout=180000)
    rounds = panel.locator("details.al-rounds")
    assert rounds.count() >= 1
    for box in rounds.all():
        box.evaluate("e => e.open = true")
    kept = panel.locator(".al-guess-kept").count()
    assert kept == panel.locator(".al-stream .al-tok.al-drafted").count() > 0
    # Where a guess was turned down the model's own pick follows, marked, unless the step ended
    # first (a kept guess was its stop token): at most once per step.
    down = panel.locator(".al-guess-down").count()
    corrected = panel.locator(".al-stream .al-tok.al-corrected").count()
    assert 0 < corrected <= down <= corrected + panel.locator(".al-step").count()
    # Each step's end counts the same rounds.
    summaries = " ".join(rounds.locator("summary").all_inner_texts())
    assert re.search(r"MTP: \d+ rounds, \d+ of \d+ guesses kept", summaries)
    corrected = panel.locator(".al-stream .al-tok.al-corrected").first
    corrected.hover()
    pop = page.locator(".al-popover")
    pop.wait_for(state="visible")
    assert "turned it down" in pop.inner_text()
    assert pop.locator(".al-pbar-row").count() == 5  # its top 5 as bars
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "10-mtp-live-rounds.png"))
    c.post("/api/models/load", {"model": "agent-qwen3_5"})
    c.wait_ready(300)
    page.close()
