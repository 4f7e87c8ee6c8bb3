"""The panel's renderer in a real browser: chapter 1 of the built book, served by a plain static server (no demo
server, so the panel replays), with a recording this test writes. Events are made with agentloop.events.make:
this tests how the panel draws the vocabulary, not a run of the loop."""

from __future__ import annotations

import functools
import http.server
import json
import math
import re
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

from agentloop.events import make
from demo_server.client import free_port
from tests.conftest import build_book, english, static_site
from tests.stand_in import TOKEN, StandIn, serve

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


def top5(chosen: int, piece: str, p: float, kept: int) -> list[dict]:
    rest = [(900, "▁the", 0.08), (901, "▁a", 0.05), (902, "\n", 0.03), (903, "▁is", 0.01)]
    cands = sorted([(chosen, piece, p), *rest], key=lambda c: -c[2])[:5]
    return [
        {"id": i, "piece": s, "p": q, "kept": rank < kept} for rank, (i, s, q) in enumerate(cands)
    ]


def tokens(
    step: int, channel: str, pieces: list[tuple[str, str, float]], start: int = 0
) -> list[dict]:
    out = []
    for n, (piece, text, p) in enumerate(pieces, start=start):
        special = piece.startswith("<")
        out.append(
            make(
                "token",
                step=step,
                index=n,
                id=100 + n,
                piece=piece,
                text="" if special else text,
                special=special,
                channel=channel,
                p=p,
                logprob=round(math.log(p), 4),
                rank=1 if p >= 0.5 else 2,
                p_sampled=p,
                kept=3,
                top=top5(100 + n, piece, p, 3),
            )
        )
    return out


def drafted(events: list[dict], at: tuple[int, ...]) -> list[dict]:
    return [{**e, "drafted": True} if i in at else e for i, e in enumerate(events)]


def recording() -> list[dict]:
    """A two-step run with a tool call, its permission and decision, an error, and the end."""
    run = [
        make(
            "run_start",
            run_id="test-run",
            harness="simple",
            model="tiny/qwen3_5",
            family="qwen3_5",
            settings={"max_steps": 3, "temperature": 0.0, "use_tools": True},
            tools=["run_python"],
        ),
        make("step_start", step=1),
        make(
            "context",
            step=1,
            prompt="<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n",
            n_tokens=18,
            added_from=0,
            media_tokens=0,
            context_length=2048,
            roles={"system": 1, "user": 1},
        ),
        make("prefill", step=1, n_tokens=18, reused=0, ms=4.0),
        *tokens(
            1,
            "thought",
            [
                ("<think>", "", 0.99),
                ("▁Compute", "Compute", 0.42),
                ("▁it", " it", 0.81),
                ("</think>", "", 0.97),
            ],
        ),
        *tokens(1, "tool_call", [("<tool_call>", "", 0.95), ('{"', '{"', 0.07)], start=4),
        make(
            "model_end",
            step=1,
            finish="stop_token",
            stop_piece="<|im_end|>",
            n_tokens=6,
            decode_ms=6.0,
            tok_per_s=1000.0,
            mtp=None,
            raw='<think>Compute it</think><tool_call>{"',
        ),
        make("tool_call", step=1, call_id="call-1", name="run_python", args={"code": "print(6*7)"}),
        make("permission", step=1, call_id="call-1"),
        make("decision", step=1, call_id="call-1", approved=True, by="user"),
        make(
            "tool_result",
            step=1,
            call_id="call-1",
            name="run_python",
            output="42\n",
            is_error=False,
            ms=3.0,
        ),
        make("step_start", step=2),
        make("prefill", step=2, n_tokens=2010, reused=1930, ms=9.0),  # 1,930 from step 1
        # Step 2 with MTP on: two guesses kept in two forward passes of the model.
        *drafted(
            tokens(
                2,
                "content",
                [
                    ("▁It", "It", 0.93),
                    ("▁is", " is", 0.88),
                    ("▁42", " 42", 0.64),
                    ("<|im_end|>", "", 0.99),
                ],
            ),
            at=(1, 2),
        ),
        make(
            "model_end",
            step=2,
            finish="stop_token",
            stop_piece="<|im_end|>",
            n_tokens=4,
            decode_ms=4.0,
            tok_per_s=1000.0,
            mtp={"drafted": 6, "accepted": 2, "forwards": 2},
            raw="It is 42<|im_end|>",
        ),
        make("error", message={"en": "An example error.", "zh": "一個範例錯誤。"}),
        make("run_end", stop_reason="final", final="It is 42", steps=2, ms=40.0),
    ]
    return run


@pytest.fixture(scope="module")
def served(site):
    """The book (this module's build), served by Python's static file server on 127.0.0.1."""
    with static_site(site) as base:
        yield site, base + "/"


def chapter1_url(site: Path, base: str) -> tuple[str, Path]:
    """Chapter 1's URL, and where its panel's data-replay points inside the built site."""
    (md,) = english((ROOT / "docs/chapters").glob("01-*.md"))
    page_url = urljoin(base, f"chapters/{md.stem}/")
    html = (site / "chapters" / md.stem / "index.html").read_text(encoding="utf-8")
    replay = re.search(r'class="agentloop-panel"[^>]*data-replay="([^"]+)"', html)[1]
    return page_url, site / urlparse(urljoin(page_url, replay)).path.lstrip("/")


def test_replay_plays_to_the_end_and_tokens_show_their_details(served, browser):
    site, base = served
    url, replay_file = chapter1_url(site, base)
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    problems: list[str] = []
    offsite: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: offsite.append(r.url) if not r.url.startswith(base) else None)

    # Without a recording the panel says so.
    replay_file.unlink(missing_ok=True)
    page.goto(url)
    page.wait_for_selector(".agentloop-panel.al-missing")
    assert "Recording missing" in page.inner_text(".agentloop-panel .al-status")
    assert "make serve" in page.inner_text(".agentloop-panel .al-note")

    events = recording()
    replay_file.parent.mkdir(parents=True, exist_ok=True)
    replay_file.write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8"
    )
    page.goto(url)
    page.wait_for_selector(".agentloop-panel .al-play")
    assert "This is a recorded run" in page.inner_text(".agentloop-panel .al-note")
    page.select_option(".agentloop-panel .al-speed", "20")
    page.click(".agentloop-panel .al-play")
    page.wait_for_selector(".agentloop-panel .al-run-end", state="visible", timeout=20_000)
    status = page.inner_text(".agentloop-panel .al-status")
    assert f"event {len(events)} of {len(events)}" in status and "finished" in status

    # Everything the recording holds was drawn.
    panel = page.locator(".agentloop-panel")
    n_tokens = sum(e["type"] == "token" for e in events)
    assert panel.locator(".al-tok:not(.al-legend .al-tok)").count() == n_tokens
    assert panel.locator(".al-step").count() == 2
    assert panel.locator(".al-seg.al-ch-thought").count() == 1
    assert panel.locator(".al-seg.al-ch-tool_call").count() == 1
    assert "Approved by user" in panel.locator(".al-permission").inner_text()
    assert panel.locator(".al-permission button:disabled").count() == 2
    assert "42" in panel.locator(".al-tool-result").inner_text()
    prefills = [
        panel.locator(".al-prefill").nth(i).inner_text().replace("\n", "") for i in range(2)
    ]
    assert "computed18 of 18 tokens" in prefills[0] and "reused" not in prefills[0]
    assert "computed80 of 2,010 tokens (1,930 reused)" in prefills[1]
    assert "It is 42" in panel.locator(".al-run-end").inner_text()
    error = panel.locator(".al-error").inner_text()
    # The server sends both languages; the panel shows the reader's (English here).
    assert "An example error." in error and "一個範例錯誤。" not in error
    # Kept guesses are marked, the legend says what the mark means, and the step's end has the MTP figure.
    assert panel.locator(".al-step .al-tok.al-drafted").count() == 2
    assert "drafted: the drafter's guess" in panel.locator(".al-legend").inner_text()
    assert "tokens per pass2.00" in panel.locator(".al-model-end").nth(1).inner_text().replace(
        "\n", ""
    )

    # Hovering a token shows the shared popover with rank, kept and the top 5.
    token = panel.locator(".al-step .al-tok").nth(1)  # "Compute", p = 0.42, rank 2
    token.hover()
    pop = page.locator(".al-popover")
    pop.wait_for(state="visible")
    text = pop.inner_text()
    assert "rank" in text and "p_sampled" in text and "kept" in text and "3 candidates" in text
    assert '"▁Compute"' in text and "0.4200" in text
    # The top 5 as probability bars, each as long as its p, the chosen token marked.
    bars = pop.locator(".al-pop-top .al-pbar-row")
    assert bars.count() == 5
    assert pop.locator(".al-pop-top .al-pbar-row.al-chosen").count() == 1
    widths = [bars.nth(i).locator(".al-pbar-fill").evaluate("e => e.style.width") for i in range(5)]
    ps = [
        c["p"] for c in next(e for e in events if e["type"] == "token" and e["index"] == 1)["top"]
    ]
    assert [float(w.rstrip("%")) for w in widths] == pytest.approx([100 * p for p in ps], abs=0.06)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "replay.png"), full_page=True)

    # The keyboard reaches the same details: focus the stream, then move with the arrow keys.
    page.mouse.move(0, 0)
    stream = panel.locator(".al-stream").first
    stream.focus()
    page.keyboard.press("ArrowRight")
    assert '"▁Compute"' in pop.inner_text()

    assert not problems, problems
    assert not offsite, f"the book fetched from elsewhere: {offsite}"
    page.close()


def test_renderer_draws_only_the_types_a_panel_asks_for(served, browser):
    _, base = served
    page = browser.new_page()
    page.goto(base)
    drawn = page.evaluate(
        """async (events) => {
            const panel = document.querySelector("script[src$='assets/panel.js']").src;
            const { render } = await import(new URL("render.js", panel).href);
            const box = document.createElement("div");
            box.className = "agentloop-panel";
            document.body.append(box);
            render(box, events, {show: new Set(["token"])});
            return {tokens: box.querySelectorAll(".al-stream .al-tok").length,
                    toolCalls: box.querySelectorAll(".al-tool-call").length,
                    ends: box.querySelectorAll(".al-run-end").length};
        }""",
        recording(),
    )
    # What a run needs from the reader (the permission, the end, an error) is drawn whatever data-show says.
    assert drawn == {
        "tokens": sum(e["type"] == "token" for e in recording()),
        "toolCalls": 0,
        "ends": 1,
    }
    page.close()


def test_a_static_page_asks_nothing_of_the_api_even_after_instant_navigation(tmp_path, browser):
    """The built book as plain files carries no agentloop-api meta, so it is the static book: every panel
    replays and no request goes to /api, on the first page and on each page Material's instant navigation
    swaps in (it works only on the site_url's own origin, so the book is built for this port)."""
    port = free_port()
    site = build_book(tmp_path / "site", SITE_URL=f"http://127.0.0.1:{port}/")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), functools.partial(Quiet, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    paths: list[str] = []
    problems: list[str] = []
    page.on("request", lambda r: paths.append(urlparse(r.url).path))
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(f"http://127.0.0.1:{port}/chapters/{chapter_stem('01')}/")
        page.locator(".agentloop-panel .al-mode", has_text="replay").first.wait_for()
        page.evaluate("() => { window.__samePage = true; }")
        for number, panel in [
            ("04", ".agentloop-stage .als-badge"),
            ("09", ".agentloop-stage .als-badge"),
            ("03", ".agentloop-stage .als-badge"),
            ("01", ".agentloop-panel .al-mode"),
        ]:
            page.locator(
                f"nav a[href*='{chapter_stem(number)}']"
            ).first.click()  # instant: no reload
            page.wait_for_url(f"**/{chapter_stem(number)}/**")
            page.locator(panel, has_text="replay").first.wait_for()
        assert page.evaluate("() => window.__samePage") is True
        assert "/assets/api.js" in paths  # the modules did load
        assert [p for p in paths if p.startswith("/api")] == []
        assert not problems, problems
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def chapter_stem(number: str) -> str:
    return english((ROOT / "docs/chapters").glob(f"{number}-*.md"))[0].stem


# Live mode against a stand-in for the demo server that speaks docs/assets/README-panel.md's API. -----------


def live_server(site: Path, events: list[dict]):
    """Serves the built book with the token meta tag injected, and the panel's API for one run that waits for
    a decision at its permission event."""
    seen: dict = {"posts": [], "decided": threading.Event()}

    class Handler(StandIn):
        def api_get(self) -> bool:
            if self.path == "/api/status":
                self.send_json(
                    200,
                    {
                        "ok": True,
                        "model": "stand-in",
                        "family": "qwen3_5",
                        "defaults": {"max_steps": 3, "temperature": 0.0, "use_tools": True},
                    },
                )
            elif self.path == "/api/runs/run-1/events":
                self.start_events()
                for ev in events:
                    if ev["type"] == "decision":
                        seen["decided"].wait(15)
                    self.event(ev)
            else:
                return False
            return True

        def do_POST(self):
            seen["posts"].append((self.path, self.headers.get("X-Agentloop-Token"), self.body()))
            if self.headers.get("X-Agentloop-Token") != TOKEN:
                return self.send_json(
                    403, make("error", message={"en": "Bad token.", "zh": "權杖錯誤。"})
                )
            if self.path == "/api/runs":
                return self.send_json(200, {"run_id": "run-1"})
            if self.path == "/api/runs/run-1/decision":
                seen["decided"].set()
                return self.send_json(200, {"ok": True})
            return self.send_json(
                404, make("error", message={"en": "Not found.", "zh": "找不到。"})
            )

    Handler.site = site
    server = serve(Handler)
    return server, seen


def test_live_mode_runs_through_the_api(served, browser):
    site, _ = served
    events = [e for e in recording() if e["type"] != "error"]
    server, seen = live_server(site, events)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        (md,) = english((ROOT / "docs/chapters").glob("01-*.md"))
        page = browser.new_page()
        page.goto(urljoin(base, f"chapters/{md.stem}/"))
        form = page.locator(".agentloop-panel .al-form")
        form.wait_for()
        assert "Live: stand-in (qwen3_5)" in page.inner_text(".agentloop-panel .al-status")
        assert form.locator('input[name="max_steps"]').input_value() == "3"
        form.locator("textarea").fill("What is 6*7?")
        form.locator(".al-run").click()
        approve = page.locator(".agentloop-panel .al-permission .al-approve")
        approve.wait_for()
        page.wait_for_function(
            "() => !document.querySelector('.agentloop-panel .al-approve').disabled"
        )
        approve.click()
        page.wait_for_selector(".agentloop-panel .al-run-end", timeout=20_000)
        assert "Approved by user" in page.locator(".agentloop-panel .al-permission").inner_text()

        start, decision = seen["posts"][0], seen["posts"][1]
        # No `mtp`: this status does not say the model has a drafter, so the switch is not offered nor sent.
        assert start == (
            "/api/runs",
            TOKEN,
            {
                "question": "What is 6*7?",
                "settings": {
                    "max_steps": 3,
                    "temperature": 0,
                    "thinking": False,
                    "use_tools": True,
                    "auto_approve": False,
                    "harness": "simple",
                    "pace": "full",
                },
            },
        )
        assert decision == (
            "/api/runs/run-1/decision",
            TOKEN,
            {"call_id": "call-1", "approve": True},
        )
        page.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_calls_code_reads_as_code_and_the_noise_is_gone(served, browser):
    """Issue 12, 5, 6 and 8: run_python's code with its own line breaks and quotes; a special token's outline
    below its underscore; no empty media tokens, no tools twice, no "by auto"."""
    _, base = served
    code = 'total = 0\nfor n in range(3):\n    total += n\nprint("total", total)'
    events = [
        make(
            "run_start",
            run_id="r",
            harness="simple",
            model="m",
            family="qwen3_5",
            settings={"temperature": 0.0, "tools": ["run_python"]},
            tools=["run_python"],
        ),
        make("step_start", step=1),
        make(
            "context",
            step=1,
            prompt="x",
            n_tokens=1,
            added_from=0,
            media_tokens={},
            context_length=64,
            roles={"user": 1},
        ),
        *tokens(1, "control", [("<|im_end|>", "", 0.9999999)]),
        make("tool_call", step=1, call_id="1.0", name="run_python", args={"code": code}),
        make("permission", step=1, call_id="1.0"),
        make("decision", step=1, call_id="1.0", approved=True, by="auto"),
    ]
    page = browser.new_page()
    page.goto(base)
    got = page.evaluate(
        """async (events) => {
            const panel = document.querySelector("script[src$='assets/panel.js']").src;
            const { render } = await import(new URL("render.js", panel).href);
            const box = document.createElement("div");
            box.className = "agentloop-panel";
            document.body.append(box);
            render(box, events, {});
            const tok = box.querySelector(".al-special");
            const range = document.createRange();
            range.selectNodeContents(tok);
            const glyphs = range.getBoundingClientRect(), chip = tok.getBoundingClientRect();
            return {code: box.querySelector(".al-tool-call .al-arg-value code").textContent,
                    header: box.querySelector(".al-header").innerText,
                    text: box.innerText,
                    below: chip.bottom - glyphs.bottom,
                    outlineOffset: getComputedStyle(tok).outlineOffset};
        }""",
        events,
    )
    assert got["code"] == code
    assert got["header"].count("run_python") == 1
    assert "media tokens" not in got["text"] and "by auto" not in got["text"]
    assert "Approved automatically" in got["text"]
    assert got["below"] >= 1 and got["outlineOffset"] == "0px", got
    page.close()


def test_the_model_and_context_tabs_sit_beside_the_step_cards(served, browser):
    """Issue 12, the seed's two tabs: Model has each step's prefill and decode from the run's own events,
    Context the prompt as the model last read it with its step's added part marked and the tokens used."""
    _, base = served
    events = recording()
    events.insert(
        events.index(next(e for e in events if e["type"] == "step_start" and e["step"] == 2)) + 1,
        make(
            "context",
            step=2,
            prompt="OLD PART|NEW PART",
            n_tokens=512,
            added_from=9,
            media_tokens=0,
            context_length=2048,
            roles={"user": 1},
        ),
    )
    page = browser.new_page()
    page.goto(base)
    got = page.evaluate(
        """async (events) => {
            const panel = document.querySelector("script[src$='assets/panel.js']").src;
            const { render } = await import(new URL("render.js", panel).href);
            const box = document.createElement("div");
            box.className = "agentloop-panel";
            document.body.append(box);
            render(box, events, {show: new Set(["token"])});
            const visible = (sel) => !box.querySelector(sel).hidden;
            const before = {steps: visible(".al-pane-steps"), model: visible(".al-pane-model")};
            box.querySelector(".al-tab[data-tab=model]").click();
            const rows = [...box.querySelectorAll(".al-step-table tr")].slice(1)
                .map((tr) => [...tr.children].map((td) => td.textContent));
            box.querySelector(".al-tab[data-tab=context]").click();
            const meter = box.querySelector(".al-meter-used").style.width;
            return {before, rows, added: box.querySelector(".al-pane-context mark.al-added").textContent,
                    text: box.querySelector(".al-pane-context .al-context-text").textContent, meter,
                    stepsHidden: box.querySelector(".al-pane-steps").hidden};
        }""",
        events,
    )
    assert got["before"] == {"steps": True, "model": False}
    assert (
        got["rows"][0][:3] == ["1", "18", "4"]
        and got["rows"][0][3] == "6"
        and got["rows"][1][0] == "2"
    )
    assert got["text"] == "OLD PART|NEW PART" and got["added"] == "NEW PART"
    assert float(got["meter"].rstrip("%")) == 25 and got["stepsHidden"]
    page.close()


MODEL_TAB = """async ([start, loaded]) => {
    const panel = document.querySelector("script[src$='assets/panel.js']").src;
    const { render } = await import(new URL("render.js", panel).href);
    const box = document.createElement("div");
    document.body.append(box);
    render(box, [start], {loadedStatus: () => loaded, recordedBackend: "transformers"});
    const pane = box.querySelector(".al-pane-model");
    const rows = Object.fromEntries([...pane.querySelectorAll(".al-spec-table tr")]
        .map((tr) => [tr.dataset.key, [...tr.children].slice(1).map((td) => td.textContent)]));
    return {rows, text: pane.textContent};
}"""


def model_start(**facts) -> dict:
    return make(
        "run_start",
        run_id="r",
        harness="simple",
        model="served-qwen",
        family="qwen3_5",
        settings={},
        tools=[],
        **facts,
    )


def test_the_model_tab_on_vllm_shows_only_what_the_server_tells(served, browser):
    """Issue 47, point 13 (the seed): over vLLM the context limit is the server's (--max-model-len) and the Model
    tab has no device, precision or parameter count; the refused kinds come with the server's reason."""
    _, base = served
    why = {
        "en": "the server was started with --language-model-only",
        "zh": "伺服器以 --language-model-only 啟動",
    }
    specs = {"layers": 4, "hidden_size": 256, "context_length": 2048, "parameters": None}
    start = model_start(
        backend="vllm",
        device=None,
        dtype=None,
        specs=specs,
        media={"reads": [], "refused": {"image": why}},
        defaults={"temperature": 1.0, "top_p": 0.95, "top_k": 20},
    )
    page = browser.new_page()
    page.goto(base)
    got = page.evaluate(MODEL_TAB, [start, None])
    assert {"device", "dtype", "precision", "parameters", "model", "family"}.isdisjoint(got["rows"])
    assert got["rows"]["context_length"] == ["2,048", "the vLLM server's --max-model-len"]
    assert got["rows"]["layers"] == ["4", "text_config.num_hidden_layers"]
    assert "Run by a vLLM server" in got["text"] and "Reads no media" in got["text"]
    assert f"Does not read image: {why['en']}" in got["text"]
    page.close()


def test_the_model_tab_never_shows_another_models_facts(served, browser):
    """A run_start without the facts (recorded before them) takes the server's only for the same model on the
    same backend; pi asking one of its own models has none to show."""
    _, base = served
    loaded = {
        "model": "served-qwen",
        "backend": "transformers",
        "device": "cpu",
        "dtype": "float32",
    }
    loaded |= {
        "specs": {"layers": 4, "context_length": 4096},
        "media": {"reads": ["image"], "refused": {}},
    }
    page = browser.new_page()
    page.goto(base)
    same = page.evaluate(MODEL_TAB, [model_start(), loaded])
    assert same["rows"]["layers"][0] == "4" and "has served-qwen loaded now" in same["text"]
    other = page.evaluate(MODEL_TAB, [model_start(), {**loaded, "model": "agent-gemma4"}])
    assert not other["rows"] and "agent-gemma4 loaded, not served-qwen" in other["text"]
    vllm = page.evaluate(MODEL_TAB, [model_start(backend="vllm"), loaded])
    assert not vllm["rows"]  # the same name on another backend is another run's model
    pi = {**model_start(), "harness": "pi", "family": "", "model": "anthropic/claude-haiku-4-5"}
    own = page.evaluate(MODEL_TAB, [pi, loaded])
    assert not own["rows"] and "pi asked one of its own models" in own["text"]
    page.close()
