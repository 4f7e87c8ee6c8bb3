"""The model menu: what GET /api/models says of each model, and the live panel's menu in a real browser, against
the real demo server on the tiny checkpoints: pick, load, see the switch in this tab and in every other one, and
a refusal (409) shown while a run holds the model."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from agentloop.model_backends import model_folder
from agentloop.paths import DEFAULT_MODEL
from demo_server.client import Client, free_port
from demo_server.menu import model_menu
from tests.conftest import TINY, build_book, built, chapter_url, demo_server
from tests.stand_in import ROUTES, TOKEN, StandIn, serve

ROOT = Path(__file__).resolve().parent.parent

FORCED_CALL = {  # step 1 of a run: a run_python call, which then waits for a permission nobody gives
    "gemma4": [
        '<|tool_call>call:run_python{code:<|"|>print(2**64)<|"|>}<tool_call|><|tool_response>'
    ],
    "qwen3_5": [
        "<tool_call>\n<function=run_python>\n<parameter=code>\nprint(2**64)\n</parameter>\n</function>\n"
        "</tool_call><|im_end|>"
    ],
}


# -- what the menu says ---------------------------------------------------------------------------------------------


def test_every_entry_says_what_it_is_and_the_default_comes_first(tmp_path, monkeypatch):
    import agentloop.paths

    for name, source in (("tiny-qwen3_5", TINY["qwen3_5"]), ("agent-gemma4", TINY["gemma4"])):
        (tmp_path / name).mkdir()
        shutil.copyfile(source / "config.json", tmp_path / name / "config.json")
    monkeypatch.setattr(model_folder, "MODELS_DIR", tmp_path)
    monkeypatch.setattr(agentloop.paths, "DEFAULT_MODEL", "agent-gemma4")

    menu = model_menu()
    assert [m["id"] for m in menu] == [
        "agent-gemma4",
        "tiny-qwen3_5",
        "Qwen/Qwen3.5-0.8B",
        "google/gemma-4-E2B-it",
    ]
    assert [m["default"] for m in menu] == [True, False, False, False]
    for m in menu:
        assert {
            "id",
            "kind",
            "family",
            "downloaded",
            "bytes",
            "parameters",
            "size",
            "description",
            "default",
        } <= set(m)
        assert set(m["description"]) == {"en", "zh"} and all(m["description"].values()), m
    agent, tiny, qwen, gemma = (m["description"] for m in menu)
    assert "toy" in agent["en"] and "Gemma 4" in agent["en"] and "run_python" in agent["en"]
    assert "models/agent-gemma4/README.md" in agent["en"] and "模型卡" in agent["zh"]
    assert "random weights" in tiny["en"] and "noise" in tiny["en"] and "隨機" in tiny["zh"]
    assert (
        "Hugging Face Hub" in qwen["en"]
        and "pinned revision" in qwen["en"]
        and "reachable" in qwen["en"]
    )
    assert "none is pinned" in gemma["en"]


# -- the menu in the live panel -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def book(site):
    built(*TINY.values())
    with demo_server(
        site, model=str(TINY["qwen3_5"]), device="cpu", allow_forced=True, orphan_s=120
    ) as srv:
        yield srv


def test_the_api_sends_the_descriptions(book):
    c = Client(book.url)
    answer = c.get("/api/models").json()
    c.close()
    first, *_ = answer["models"]
    assert first["default"] is True and first["id"] == DEFAULT_MODEL
    # Sent with the zh-Hans the server adds to each {en, zh} (demo_server/zh_hans.py).
    assert all(set(m["description"]) == {"en", "zh", "zh-Hans"} for m in answer["models"])


def test_the_stand_in_plays_routes_the_real_server_has(book):
    """Each route tests/stand_in.py puts in its pages' agentloop-api meta is one the real server has: the same
    endpoint name, method and path template, so the panels ask the stand-in what they would ask the server."""
    app = book.server.config.app
    real = {
        r.name: [method, r.path]
        for r in app.routes
        if r.path.startswith("/api/")
        for method in sorted(getattr(r, "methods", None) or ())
        if method != "HEAD"
    }
    assert {name: real.get(name) for name in ROUTES} == ROUTES


def test_pick_load_and_every_tab_follows(book, browser):
    c = Client(book.url)
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    problems: list[str] = []
    try:
        tab = context.new_page()
        tab.on("pageerror", lambda e: problems.append(str(e)))
        tab.goto(chapter_url(book.url, "01"))
        panel = tab.locator(".agentloop-panel").first
        panel.locator("button.al-run").wait_for(timeout=20000)  # live
        other = context.new_page()  # a second tab, open before the switch
        other.goto(chapter_url(book.url, "01"))
        other_panel = other.locator(".agentloop-panel").first
        other_panel.locator("button.al-run").wait_for(timeout=20000)
        assert "tiny-qwen3_5 (qwen3_5)" in other_panel.locator(".al-status").inner_text()

        # Compact until opened: one line naming the model.
        menu = panel.locator("details.al-model")
        assert menu.locator("summary").inner_text().strip() == "Model: tiny-qwen3_5 (qwen3_5)"
        menu.locator("summary").click()
        select = menu.locator("select.al-model-select")
        tab.wait_for_function(
            "() => document.querySelectorAll('.agentloop-panel select.al-model-select option').length >= 4"
        )
        options = select.locator("option").all_inner_texts()
        assert any(o.startswith("tiny-qwen3_5 (") for o in options), options
        assert any(o.startswith("tiny-gemma4 (gemma4") for o in options), options
        assert any(
            "Qwen/Qwen3.5-0.8B" in o and ("not downloaded" in o or "GB" in o) for o in options
        ), options
        assert select.input_value() == "tiny-qwen3_5"  # the current model is selected
        assert menu.locator("button.al-load").is_disabled()  # it is loaded already
        assert "random weights" in menu.locator(".al-model-desc").inner_text()

        # Replaced on the switch: chapter 1's form starts from its recording's settings (issue 12, 10), the new
        # model's defaults filling what the recording leaves out.
        recorded = json.loads(
            (ROOT / "docs/chapters/runs/chapter1.jsonl").read_text().splitlines()[0]
        )["settings"]
        panel.locator(".al-form-settings > summary").click()  # the settings are folded to one line
        panel.locator('input[name="temperature"]').fill("4.5")
        select.select_option("tiny-gemma4")
        desc = menu.locator(".al-model-desc").inner_text()
        # The server sends both languages; the panel shows the reader's (English here).
        assert "Gemma 4" in desc and "random weights" in desc and "隨機" not in desc
        menu.locator("button.al-load").click()
        panel.locator(".al-status", has_text="tiny-gemma4 (gemma4)").wait_for(timeout=30000)
        assert "tiny-gemma4 is loaded" in menu.locator(".al-model-msg").inner_text()
        assert menu.locator("summary").inner_text().strip() == "Model: tiny-gemma4 (gemma4)"
        status = c.status()
        assert status["model"] == "tiny-gemma4"
        # The temperature the reader typed stays theirs through the load (issue 47: a load used to put the
        # recording's back); the other tab, where nobody typed, has the recording's.
        for p in (panel, other_panel):
            p.locator(".al-status", has_text="tiny-gemma4").wait_for(timeout=10000)
        assert panel.locator('input[name="temperature"]').input_value() == "4.5"
        assert (
            float(other_panel.locator('input[name="temperature"]').input_value())
            == recorded["temperature"]
        )

        # The other tab saw the switch on its next status poll (above); a page opened now shows it at once.
        assert other_panel.locator("select.al-model-select").input_value() == "tiny-gemma4"
        fresh = context.new_page()
        fresh.goto(chapter_url(book.url, "01"))
        fresh.locator(
            ".agentloop-panel .al-status", has_text="tiny-gemma4 (gemma4)"
        ).first.wait_for(timeout=20000)
        fresh.close()

        # While a run holds the model, a switch is refused (409), and the panel says so in both languages.
        run_id = c.start_run(
            "What is 2**64?", {"max_steps": 2, "max_new_tokens": 64}, forced=FORCED_CALL["gemma4"]
        )
        try:
            select.select_option("tiny-qwen3_5")
            menu.locator("button.al-load").click()
            refusal = menu.locator(".al-model-error")
            refusal.wait_for(timeout=10000)
            text = refusal.inner_text()
            assert "409" in text and run_id in text and "正在使用模型" not in text  # English here
        finally:
            c.post(f"/api/runs/{run_id}/stop", {})
        assert not problems, problems
    finally:
        context.close()
        c.close()


# -- the load's progress, from a stand-in server that paces the load stream -------------------------------------------


def stand_in(site: Path, port: int = 0):
    """The book with the token meta tag, and a model API whose load streams: a download half done, then (when
    `go` is set) loading and ready; a load of "broken/model" ends in an error."""
    state = {
        "model": "tiny-qwen3_5",
        "family": "qwen3_5",
        "loading": None,
        "posts": [],
        "go": threading.Event(),
    }
    menu = [
        {
            "id": "tiny-qwen3_5",
            "kind": "tiny",
            "family": "qwen3_5",
            "downloaded": True,
            "bytes": 7_000_000,
            "parameters": 3_600_000,
            "size": None,
            "default": True,
            "description": {"en": "Random weights.", "zh": "隨機權重。"},
        },
        {
            "id": "Qwen/Qwen3.5-0.8B",
            "kind": "real",
            "family": "qwen3_5",
            "downloaded": False,
            "bytes": None,
            "parameters": None,
            "size": "0.8B",
            "default": False,
            "description": {"en": "The real model.", "zh": "真正的模型。"},
        },
        {
            "id": "broken/model",
            "kind": "real",
            "family": "qwen3_5",
            "downloaded": False,
            "bytes": None,
            "parameters": None,
            "size": "1B",
            "default": False,
            "description": {"en": "Fails.", "zh": "失敗。"},
        },
    ]

    class Handler(StandIn):
        def api_get(self) -> bool:
            if self.path == "/api/status":
                self.send_json(
                    200,
                    {
                        "ok": True,
                        "model": None if state["loading"] else state["model"],
                        "family": None if state["loading"] else state["family"],
                        "loading": bool(state["loading"]),
                        "loading_model": state["loading"],
                        "defaults": {"max_steps": 3},
                    },
                )
            elif self.path == "/api/models":
                self.send_json(
                    200,
                    {
                        "models": [{**m, "current": m["id"] == state["model"]} for m in menu],
                        "current": state["model"],
                    },
                )
            elif self.path == "/api/models/load/events":
                self.stream_load(state["loading"])
            else:
                return False
            return True

        def stream_load(self, model: str) -> None:
            self.start_events()
            self.event({"type": "load_start", "load_id": "l1", "model": model})
            self.event({"type": "family", "model": model, "family": "qwen3_5"})
            if model == "broken/model":
                state["loading"] = None
                return self.event(
                    {"type": "error", "message": {"en": "No Hub here.", "zh": "連不上 Hub。"}}
                )
            self.event(
                {
                    "type": "download",
                    "model": model,
                    "bytes_done": 50_000_000,
                    "bytes_total": 100_000_000,
                    "files_done": 1,
                    "files_total": 4,
                }
            )
            state["go"].wait(20)
            self.event({"type": "loading", "model": model})
            state["model"], state["loading"] = model, None
            self.event({"type": "ready", "model": model, "family": "qwen3_5", "ms": 1234.5})

        def do_POST(self):
            body = self.body()
            state["posts"].append((self.path, self.headers.get("X-Agentloop-Token"), body))
            if self.path == "/api/models/load":
                state["loading"] = body["model"]
                return self.send_json(202, {"ok": True, "load_id": "l1", "model": body["model"]})
            return self.send_json(
                404, {"type": "error", "message": {"en": "Not here.", "zh": "沒有。"}}
            )

    Handler.site = site
    server = serve(Handler, port)
    return server, state


def test_a_load_shows_its_download_progress_then_ready_or_its_error(site, browser):
    server, state = stand_in(site)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    try:
        page.goto(chapter_url(base, "01"))
        panel = page.locator(".agentloop-panel").first
        panel.locator("button.al-run").wait_for(timeout=20000)
        menu = panel.locator("details.al-model")
        menu.locator("summary").click()
        select = menu.locator("select.al-model-select")
        page.wait_for_function(
            "() => document.querySelectorAll('.agentloop-panel select.al-model-select option').length >= 3"
        )
        assert any("0.8B, not downloaded" in o for o in select.locator("option").all_inner_texts())
        select.select_option("Qwen/Qwen3.5-0.8B")
        menu.locator("button.al-load").click()

        progress = menu.locator(".al-model-progress")
        progress.wait_for(state="visible", timeout=10000)
        menu.locator(".al-model-progress-text", has_text="50.0 MB of 100 MB").wait_for(
            timeout=10000
        )
        bar = menu.locator("progress.al-model-bar")
        assert bar.evaluate("b => [b.value, b.max]") == [50_000_000, 100_000_000]
        assert "downloading Qwen/Qwen3.5-0.8B… 50%" in menu.locator("summary").inner_text()
        assert (
            "Live: downloading Qwen/Qwen3.5-0.8B… 50%" in panel.locator(".al-status").inner_text()
        )
        assert menu.locator("button.al-load").is_disabled()
        state["go"].set()
        panel.locator(".al-status", has_text="Qwen/Qwen3.5-0.8B (qwen3_5)").wait_for(timeout=10000)
        assert "Qwen/Qwen3.5-0.8B is loaded in 1.2 s" in menu.locator(".al-model-msg").inner_text()
        assert progress.is_hidden()
        assert state["posts"][0] == (
            "/api/models/load",
            TOKEN,
            {"model": "Qwen/Qwen3.5-0.8B", "backend": "transformers"},
        )

        select.select_option("broken/model")
        menu.locator("button.al-load").click()
        error = menu.locator(".al-model-error")
        error.wait_for(timeout=10000)
        assert "No Hub here." in error.inner_text() and "連不上 Hub。" not in error.inner_text()
        # No stream is left open: the server has ended both, and the page holds none.
        page.wait_for_timeout(300)
        assert state["loading"] is None
    finally:
        page.close()
        server.shutdown()
        server.server_close()


# Counts the page's EventSources, and how many are still open.
TRACK_EVENT_SOURCES = """(() => {
  const Native = window.EventSource;
  window.__sources = [];
  window.EventSource = class extends Native {
    constructor(url) { super(url); window.__sources.push(this); }
  };
})();"""


def test_instant_navigation_closes_the_load_stream_and_the_next_page_follows_the_load(
    tmp_path, browser
):
    """Material's instant navigation works only on the site_url's own origin: the book is built for this port."""
    port = free_port()
    site = build_book(tmp_path / "site", SITE_URL=f"http://127.0.0.1:{port}/")
    server, state = stand_in(site, port)
    base = f"http://127.0.0.1:{port}"
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.add_init_script(TRACK_EVENT_SOURCES)
    states = "() => window.__sources.map((s) => s.readyState)"  # 1 open, 2 closed
    try:
        page.goto(chapter_url(base, "01"))
        page.evaluate("() => { window.__samePage = true; }")
        panel = page.locator(".agentloop-panel").first
        panel.locator("button.al-run").wait_for(timeout=20000)
        menu = panel.locator("details.al-model")
        menu.locator("summary").click()
        page.wait_for_function(
            "() => document.querySelectorAll('.agentloop-panel select.al-model-select option').length >= 3"
        )
        menu.locator("select.al-model-select").select_option("Qwen/Qwen3.5-0.8B")
        menu.locator("button.al-load").click()
        menu.locator(".al-model-progress-text", has_text="50.0 MB").wait_for(timeout=10000)
        assert page.evaluate(states) == [1]

        page.locator("a[href*='02-model-families']").first.click()  # instant: no reload
        page.wait_for_url("**/02-model-families/**")
        assert page.evaluate("() => window.__samePage") is True
        page.locator(
            ".agentloop-panel .al-status", has_text="downloading Qwen/Qwen3.5-0.8B… 50%"
        ).first.wait_for(timeout=10000)
        # The old page's stream is closed; this page follows the load again, from its first event.
        page.wait_for_function(
            "() => window.__sources.map((s) => s.readyState).join() === '2,1'", timeout=10000
        )
        state["go"].set()
        page.locator(
            ".agentloop-panel .al-status", has_text="Qwen/Qwen3.5-0.8B (qwen3_5)"
        ).first.wait_for(timeout=10000)
        page.wait_for_function("() => window.__sources.every((s) => s.readyState === 2)")
    finally:
        page.close()
        server.shutdown()
        server.server_close()


# -- what runs the model: the panel's switch, against a stand-in that plays a demo server with VLLM_URL set ----------


def backend_stand_in(site: Path):
    """A demo server whose menu offers agent-qwen3_5 on transformers and the vLLM server's agent-gemma4 on vLLM;
    a load switches model and backend at once."""
    state = {"model": "agent-qwen3_5", "family": "qwen3_5", "backend": "transformers", "posts": []}
    menu = [
        {
            "id": "agent-gemma4",
            "kind": "served",
            "family": "gemma4",
            "downloaded": True,
            "bytes": None,
            "parameters": None,
            "size": None,
            "default": False,
            "backends": ["vllm"],
            "description": {"en": "Served by vLLM.", "zh": "由 vLLM 提供。"},
        },
        {
            "id": "agent-qwen3_5",
            "kind": "trained",
            "family": "qwen3_5",
            "downloaded": True,
            "bytes": 7_000_000,
            "parameters": 3_600_000,
            "size": None,
            "default": True,
            "backends": ["transformers"],
            "description": {"en": "Trained here.", "zh": "在這裡訓練。"},
        },
    ]

    class Handler(StandIn):
        def api_get(self) -> bool:
            if self.path == "/api/status":
                vllm = state["backend"] == "vllm"
                self.send_json(
                    200,
                    {
                        "ok": True,
                        "model": state["model"],
                        "family": state["family"],
                        "backend": state["backend"],
                        "where": "http://127.0.0.1:8100" if vllm else None,
                        "loading": False,
                        "loading_model": None,
                        "defaults": {"max_steps": 3},
                    },
                )
            elif self.path == "/api/models":
                self.send_json(
                    200,
                    {
                        "models": [{**m, "current": m["id"] == state["model"]} for m in menu],
                        "current": state["model"],
                    },
                )
            elif self.path == "/api/models/load/events":
                self.start_events()
                self.event({"type": "load_start", "load_id": "l1", "model": state["model"]})
                self.event(
                    {
                        "type": "ready",
                        "model": state["model"],
                        "family": state["family"],
                        "ms": 10.0,
                    }
                )
            else:
                return False
            return True

        def do_POST(self):
            body = self.body()
            state["posts"].append((self.path, body))
            if self.path == "/api/models/load":
                entry = next(m for m in menu if m["id"] == body["model"])
                state.update(model=entry["id"], family=entry["family"], backend=body["backend"])
                return self.send_json(202, {"ok": True, "load_id": "l1", "model": body["model"]})
            return self.send_json(
                404, {"type": "error", "message": {"en": "Not here.", "zh": "沒有。"}}
            )

    Handler.site = site
    return serve(Handler), state


def test_what_runs_the_model_switch_lists_that_backends_models_and_every_tab_follows(site, browser):
    server, state = backend_stand_in(site)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    try:
        tab, other = context.new_page(), context.new_page()
        for page in (tab, other):
            page.goto(chapter_url(url, "01"))
            page.locator(".agentloop-panel button.al-run").first.wait_for(timeout=20000)
        panel = tab.locator(".agentloop-panel").first
        menu = panel.locator("details.al-model")
        menu.locator("summary").click()
        switch = menu.locator("select.al-backend-select")
        assert switch.input_value() == "transformers"
        tab.wait_for_function(
            "() => document.querySelector('select.al-model-select').options.length > 0"
        )
        assert (
            menu.locator("select.al-model-select option")
            .all_inner_texts()[0]
            .startswith("agent-qwen3_5")
        )
        assert (
            menu.locator("select.al-model-select option").count() == 1
        )  # only what transformers can run

        switch.select_option("vllm")
        tab.wait_for_function(
            "() => document.querySelector('select.al-model-select').value === 'agent-gemma4'"
        )
        assert menu.locator("select.al-model-select option").count() == 1
        menu.locator("button.al-load").click()
        panel.locator(".al-status", has_text="on vLLM at http://127.0.0.1:8100").wait_for(
            timeout=10000
        )
        assert state["posts"][0] == (
            "/api/models/load",
            {"model": "agent-gemma4", "backend": "vllm"},
        )
        # The other tab follows on its next status poll: its switch and its status line.
        other_panel = other.locator(".agentloop-panel").first
        other_panel.locator(".al-status", has_text="agent-gemma4 (gemma4), on vLLM").wait_for(
            timeout=10000
        )
        assert other_panel.locator("select.al-backend-select").input_value() == "vllm"

        switch.select_option("transformers")
        tab.wait_for_function(
            "() => document.querySelector('select.al-model-select').value === 'agent-qwen3_5'"
        )
        menu.locator("button.al-load").click()
        panel.locator(".al-status", has_text="agent-qwen3_5 (qwen3_5), on this machine").wait_for(
            timeout=10000
        )
        assert state["posts"][1] == (
            "/api/models/load",
            {"model": "agent-qwen3_5", "backend": "transformers"},
        )
    finally:
        context.close()
        server.shutdown()


def test_a_folders_examples_are_read_only_when_they_have_the_shape_the_panel_draws(tmp_path):
    from demo_server.menu import model_examples

    assert model_examples(str(tmp_path)) is None  # no examples.json
    path = tmp_path / "examples.json"
    good = {
        "note": {"en": "A toy.", "zh": "玩具。"},
        "questions": [
            {"kind": "arithmetic", "en": "What is 2 * 3?", "expect": "6"},
            {"kind": "units"},  # no question: left out
            "not a question",
        ],
    }
    path.write_text(json.dumps(good), encoding="utf-8")
    assert model_examples(str(tmp_path)) == {
        "note": good["note"],
        "questions": [{"kind": "arithmetic", "en": "What is 2 * 3?", "expect": "6"}],
    }
    for bad in ("{not json", json.dumps({"note": "no languages", "questions": []}), "[]"):
        path.write_text(bad, encoding="utf-8")
        assert model_examples(str(tmp_path)) is None
