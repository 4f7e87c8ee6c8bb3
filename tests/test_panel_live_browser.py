"""The live panel a reader trusts (issue 12), in Debian's Chromium against the real demo server on the embedded
default model, and a replay on a static server: a panel whose data-show leaves out permission and the end still
shows both; Stop while a permission waits settles it; the live form starts from the recording's settings and
offers MTP only where the model has a drafter; live events link to their source line; a replay keeps the run's
own pace (t_ms) and a static page sends nothing to /api."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloop.model_families import FAMILIES
from demo_server.client import Client
from demo_server.conversations import Conversations
from demo_server.errors import ApiError
from tests.conftest import chapter_url, demo_server, static_site

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
QWEN = FAMILIES["qwen3_5"]  # the embedded default model's family
QUICK = {"max_new_tokens": 64, "max_steps": 3, "temperature": 0, "auto_approve": True}


def forced_call(code: str) -> str:
    return QWEN.write_call("run_python", {"code": code})


def forced_answer(text: str) -> str:
    return text + QWEN.stop_pieces[0]


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu", allow_forced=True) as srv:
        yield srv


def test_a_filtered_live_panel_asks_permission_and_stop_settles_it(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(chapter_url(server.url, "08"))
    # Chapter 8's panel draws only context, prefill, token and model_end.
    panel = page.locator(".agentloop-panel").first
    assert "permission" not in panel.get_attribute("data-show")
    panel.locator("button.al-run").wait_for(timeout=30000)
    form = panel.locator("form.al-form")
    # The form starts from the recording beside it (ch08.spec.json), not from the server's defaults.
    page.wait_for_function(
        "() => document.querySelector('.al-form input[name=max_new_tokens]').value === '96'",
        timeout=20000,
    )
    assert form.locator("input[name=temperature]").input_value() == "0"
    # All but auto-approve: the recording auto-approved, but a live form starts asking first (issue 47), so
    # a first Run shows the permission step, as here.
    assert not form.locator("input[name=auto_approve]").is_checked()
    # Qwen3.5 has no drafter here: no MTP switch.
    assert form.locator("input[name=mtp]").is_hidden()
    panel.locator("button.al-run").click()
    approve = panel.locator("button.al-approve").first
    approve.wait_for(timeout=240000)  # drawn although data-show leaves permission out
    assert approve.is_enabled()
    # Live events carry the line that sent them.
    links = panel.locator("a.al-src")
    assert links.count() > 0
    # The loop's own lines, the step it shares with pi (step.py) and the reader's side (base.py).
    senders = ("simple_harness.py", "step.py", "base.py")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert all(any(f"/harnesses/{s}/#L" in h for s in senders) for h in hrefs), hrefs
    panel.locator("button.al-stop").click()
    panel.locator(".al-run-end").wait_for(timeout=60000)  # the end is drawn too
    assert "user_stopped" in panel.inner_text()
    assert approve.is_disabled() and panel.locator("button.al-deny").first.is_disabled()
    assert "The run waits for your decision." not in panel.inner_text()
    assert "Not answered: the run ended first." in panel.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "chapter8-live-stopped.png"))
    page.close()


def test_mtp_without_a_drafter_is_refused_with_a_clear_error(server):
    c = Client(server.url)
    assert c.status()["mtp"] is False
    r = c.post("/api/runs", {"question": "Hi", "settings": {"mtp": True}})
    assert (
        r.status_code == 400
        and "no MTP drafter" in r.json()["message"]["en"]
        and r.json()["message"]["zh"]
    )
    assert c.status()["busy"] is False
    c.close()


def test_a_replay_keeps_the_runs_own_pace_and_a_static_page_asks_no_api(
    site, browser, tmp_path, own_tiny
):
    # A run of the real tiny model (its output forced: a call, then the answer), replayed by chapter 1's panel.
    from agentloop.harnesses.settings import RunSettings
    from agentloop.harnesses.simple_harness import SimpleHarness

    backend = own_tiny("qwen3_5")
    for text in (forced_call("print(7)"), forced_answer("7")):
        backend.force(text)
    run: list[dict] = []
    SimpleHarness(
        backend,
        [],
        "What is 7?",
        RunSettings(max_new_tokens=64, auto_approve=True),
        run.append,
        files=tmp_path,
    ).run()
    with static_site(site) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        asked = []
        page.on("request", lambda r: asked.append(r.url) if "/api/" in r.url else None)
        page.goto(chapter_url(base, "01"))
        panel = page.locator(".agentloop-panel").first
        panel.locator("button.al-play").wait_for(timeout=20000)
        # Each event waits what the run waited between it and the one before (t_ms), at most 1.5 s.
        waits = page.evaluate(
            """(run) => {
            const p = document.querySelector('.agentloop-panel')._alPanel.replay;
            p.setup(run);
            return p.events.map((ev, i) => [ev.type, ev.t_ms, i ? p.delayBefore(i) : 0]);
        }""",
            run,
        )
        times = [t for _, t, _ in waits]
        for i in range(1, len(waits)):
            assert waits[i][2] == pytest.approx(
                min(1500, max(0, times[i] - times[i - 1])), abs=1e-6
            )
        # So 1x takes as long as the run did (less any wait over 1.5 s), not 150 ms more per event.
        assert sum(w for _, _, w in waits) <= times[-1] - times[0] + 1e-6
        assert not asked, asked
        page.close()


def run_to_end(c: Client, body: dict) -> tuple[dict, list[dict]]:
    r = c.post("/api/runs", body)
    assert r.status_code == 200, r.text
    return r.json(), list(c.run_events(r.json()["run_id"]))


def test_a_follow_up_continues_the_conversation_and_its_files(server):
    c = Client(server.url)
    first, evs = run_to_end(
        c,
        {
            "question": "Remember 7.",
            "settings": QUICK,
            "forced": [forced_call("open('/data/n.txt', 'w').write('7')"), forced_answer("Saved.")],
        },
    )
    assert evs[-1]["final"] == "Saved."
    second, evs = run_to_end(
        c,
        {
            "question": "What did I ask you to remember?",
            "settings": QUICK,
            "conversation_id": first["conversation_id"],
            "forced": [forced_call("print(open('/data/n.txt').read())"), forced_answer("7")],
        },
    )
    assert (
        second["conversation_id"] == first["conversation_id"]
        and second["run_id"] != first["run_id"]
    )
    prompt = next(e for e in evs if e["type"] == "context")["prompt"]
    assert prompt.index("Remember 7.") < prompt.index("Saved.") < prompt.index("What did I ask you")
    assert (
        next(e for e in evs if e["type"] == "tool_result")["output"].strip() == "7"
    )  # the same /data
    # A new conversation sees neither.
    third, evs = run_to_end(
        c,
        {
            "question": "Anything saved?",
            "settings": QUICK,
            "forced": [forced_call("import os; print(os.listdir('/data'))"), forced_answer("No.")],
        },
    )
    assert third["conversation_id"] != first["conversation_id"]
    assert "Remember 7." not in next(e for e in evs if e["type"] == "context")["prompt"]
    assert next(e for e in evs if e["type"] == "tool_result")["output"].strip() == "[]"
    r = c.post("/api/runs", {"question": "Hi", "conversation_id": "0123456789ab"})
    assert (
        r.status_code == 404
        and "no conversation" in r.json()["message"]["en"]
        and r.json()["message"]["zh"]
    )
    c.close()


def test_the_server_keeps_a_bounded_number_of_conversations_and_says_when_one_expired():
    kept = Conversations(keep=2)
    oldest, *_ = [kept.new() for _ in range(3)]
    assert not oldest.files.exists()  # its folder went with it
    with pytest.raises(ApiError) as e:
        kept.get(oldest.id)
    assert (
        e.value.status == 410 and "expired" in e.value.en and "last 2 conversations" in e.value.en
    )
    kept.close()


def test_the_panel_shows_each_question_as_its_turn_and_follows_up(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    outputs = [
        [forced_call("open('/data/n.txt', 'w').write('7')"), forced_answer("Saved.")],
        [forced_call("print(open('/data/n.txt').read())"), forced_answer("It is 7.")],
        [forced_answer("A fresh start.")],
    ]

    def force(
        route,
    ):  # the server's testing aid (allow_forced): the model writes these, the rest is real
        body = json.loads(route.request.post_data)
        route.continue_(post_data=json.dumps({**body, "forced": outputs.pop(0)}))

    page.route("**/api/runs", force)

    page.goto(chapter_url(server.url, "01"))
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=30000)
    # The form has taken chapter 1's recorded settings (chapter1.spec.json) before the test changes one.
    page.wait_for_function(
        "() => document.querySelector('.al-form input[name=max_new_tokens]').value === '128'",
        timeout=20000,
    )
    panel.locator(".al-form-settings > summary").click()  # the settings are folded to one line
    panel.locator("input[name=auto_approve]").check()
    ask = panel.locator("textarea")
    new = panel.locator("button.al-new-conversation")
    continuing = panel.locator(".al-continuing")
    assert new.is_disabled() and continuing.is_hidden()
    # The examples offer a follow-up, "first → then": with no conversation going it asks the first question.
    # The default model's examples.json offers it; the test asks other questions in its place (forced above).
    example = panel.locator("button.al-example[data-kind=follow_up]").first
    assert example.inner_text() == "What is 17 * 23? → and times 2?"
    assert "follow-up" in panel.locator(".al-examples-list").inner_text()
    example.click()
    assert ask.input_value() == "What is 17 * 23?"
    ask.fill("Remember 7.")
    panel.locator("button.al-run").click()
    panel.locator(".al-run-end").first.wait_for(timeout=120000)
    # Beside New conversation, the form says the next question continues this one.
    assert continuing.is_visible() and continuing.inner_text() == "continuing: 1 earlier question"
    example.click()  # a conversation is going: the follow-up itself
    assert ask.input_value() == "and times 2?"
    ask.fill("What did I ask you to remember?")
    panel.locator("button.al-run").click()
    panel.locator(".al-turn:nth-child(2) .al-run-end").wait_for(timeout=120000)
    assert continuing.inner_text() == "continuing: 2 earlier questions"
    turns = panel.locator(".al-turn")
    assert turns.count() == 2
    assert turns.nth(0).locator(".al-asked").inner_text().endswith("Remember 7.")
    assert "What did I ask you to remember?" in turns.nth(1).locator(".al-asked").inner_text()
    assert "It is 7." in turns.nth(1).inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "chapter1-live-follow-up.png"))
    assert new.is_enabled()
    new.click()
    assert panel.locator(".al-turn").count() == 0 and ask.input_value() == ""
    assert continuing.is_hidden()
    ask.fill("Start again.")
    panel.locator("button.al-run").click()
    panel.locator(".al-run-end").first.wait_for(timeout=120000)
    assert panel.locator(".al-turn").count() == 1 and "A fresh start." in panel.inner_text()
    page.close()
