"""pi's own models: nothing loads here, pi asks its provider. The provider is a stand-in on loopback, an
OpenAI-compatible server of this test's own registered the way a reader registers one in pi (their pi
agent dir's models.json, its key in auth.json), so no traffic leaves the machine. Real pi from
`npm ci`, real bubblewrap for the tool it calls. The reader's pi logins are read only with the switch
on (LOGINS_SWITCH), and never reach the conversation's folder."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentloop import events
from agentloop.harnesses.pi.command import LOGINS_SWITCH, NODE, PI_CLI
from agentloop.harnesses.pi.harness import PiHarness
from agentloop.harnesses.pi.menu import PiMenu
from agentloop.harnesses.settings import RunSettings
from demo_server.client import Client
from tests.conftest import demo_server

COMMAND = "echo from-the-sandbox"


class StandIn(BaseHTTPRequestHandler):
    """Streams one chat completion: a bash call first, then, once a tool's result is in the
    conversation, the answer."""

    seen: list[dict] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StandIn.seen.append({"auth": self.headers.get("Authorization"), "body": body})
        answered = any(m.get("role") == "tool" for m in body["messages"])
        if answered:
            deltas = [({"role": "assistant", "content": "done"}, None), ({}, "stop")]
        else:
            call = {
                "index": 0,
                "id": "call_0",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": COMMAND})},
            }
            deltas = [({"role": "assistant", "tool_calls": [call]}, None), ({}, "tool_calls")]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for delta, finish in deltas:
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "stand-in",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        last = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "stand-in"}
        self.wfile.write(b"data: " + json.dumps({**last, "choices": [], "usage": usage}).encode())
        self.wfile.write(b"\n\ndata: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    assert NODE.exists() and PI_CLI.exists(), "pi is not installed: run `npm ci`"
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    StandIn.seen = []
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture
def pi_home(tmp_path, monkeypatch, stand_in):
    """A reader's HOME whose pi knows the stand-in: models.json registers it, auth.json holds its
    key (pi prefers auth.json's key to models.json's)."""
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True)
    provider = {
        "baseUrl": f"http://127.0.0.1:{stand_in}/v1",
        "api": "openai-completions",
        "apiKey": "key-in-models-json",
        "compat": {"supportsDeveloperRole": False, "supportsStore": False},
        "models": [
            {
                "id": "stand-in",
                "name": "Stand-in",
                "reasoning": False,
                "input": ["text"],
                "contextWindow": 32000,
                "maxTokens": 1000,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }
        ],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"standin": provider}}))
    (agent / "auth.json").write_text(
        json.dumps({"standin": {"type": "api_key", "key": "key-in-auth-json"}})
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    return agent


def test_the_readers_pi_logins_count_only_when_they_opt_in(pi_home, monkeypatch):
    monkeypatch.delenv(LOGINS_SWITCH, raising=False)
    assert PiMenu().models()["models"] == []  # off by default: nothing of ~/.pi is read
    monkeypatch.setenv(LOGINS_SWITCH, "1")
    ids = [m["id"] for m in PiMenu().models()["models"]]
    assert "standin/stand-in" in ids


def test_pis_own_model_runs_with_nothing_loaded_and_names_each_tool_as_it_starts(
    pi_home, folder, monkeypatch
):
    monkeypatch.setenv(LOGINS_SWITCH, "1")
    got: list[dict] = []
    settings = RunSettings(pi_model="standin/stand-in", auto_approve=True, time_limit_s=120)
    harness = PiHarness(
        None, [], "Say it from bash.", settings, lambda e: (events.check(e), got.append(e)), folder
    )
    harness.run()
    assert harness.llm is None and got[0]["model"] == "standin/stand-in"
    # The key came from the reader's auth store, and pi's own prompt and tools went with it.
    assert StandIn.seen[0]["auth"] == "Bearer key-in-auth-json"
    sent = StandIn.seen[0]["body"]
    assert sent["messages"][0]["content"].startswith("You are a coding assistant running inside pi")
    # toolcall_start names the tool in the delta stream, before its arguments.
    calls = [e["text"] for e in got if e["type"] == "delta" and e["channel"] == "tool_call"]
    assert calls and calls[0] == "bash "
    result = [e for e in got if e["type"] == "tool_result"][0]
    assert result["name"] == "bash" and "from-the-sandbox" in result["output"]
    assert got[-1]["type"] == "run_end" and got[-1]["final"] == "done"
    # The reader's logins stayed in pi's private agent dir: none of it is in /data.
    kept = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    assert "key-in-auth-json" not in kept and "key-in-models-json" not in kept


def test_the_server_runs_pis_own_model_with_no_model_of_its_own(pi_home, monkeypatch, tmp_path):
    # No page model at all (its name is one the menu does not have): a run of pi's own model starts
    # anyway, where before it was refused with 409 "No model is loaded".
    monkeypatch.setenv(LOGINS_SWITCH, "1")
    with demo_server(tmp_path / "site", model="no-such-model", device="cpu") as server:
        client = Client(server.url)
        status = client.status()
        # No model, but a run's defaults all the same: a live form starts from them (the book's tool ticked).
        assert status["model"] is None and status["defaults"]["tools"] == ["run_python"]
        run_id = client.start_run(
            "Say it from bash.",
            {"harness": "pi", "pi_model": "standin/stand-in", "auto_approve": True},
        )
        evs = list(client.run_events(run_id))
        client.close()
    assert not [e for e in evs if e["type"] == "error"], evs[-3:]
    assert evs[-1]["type"] == "run_end" and evs[-1]["final"] == "done"


def test_chapter_16_goes_live_with_no_model_loaded_and_runs_pis_own(
    pi_home, monkeypatch, site, browser
):
    # A server whose load failed has no page model; its panels are live all the same, say so, and run
    # pi's own model (where before they stayed replays and nothing could be asked).
    monkeypatch.setenv(LOGINS_SWITCH, "1")
    with demo_server(site, model="no-such-model", device="cpu") as server:
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(f"{server.url}/chapters/16-pi/")
        # pi's own loop, its own tools (the second pair's left panel), the live form's tools ticked as a run
        # gets them with no model loaded (status.defaults).
        pi = page.locator(".al-side-by-side").nth(1).locator(".agentloop-panel").first
        pi.locator("button.al-run").wait_for(timeout=20000)  # live, though nothing is loaded
        pi.get_by_text("no model is loaded").first.wait_for(timeout=20000)
        option = pi.locator("select.al-pi-model-select option[value='standin/stand-in']")
        option.wait_for(state="attached", timeout=30000)  # pi's own models, asked once pi is picked
        pi.locator("select.al-pi-model-select").select_option("standin/stand-in")
        pi.locator("textarea").fill("Say it from bash.")
        pi.locator("button.al-run").click()
        approve = pi.locator("button.al-approve").first
        approve.wait_for(timeout=120000)  # pi's bash, asked before it runs in the sandbox
        approve.click()
        pi.locator(".al-run-end").wait_for(timeout=120000)
        assert "from-the-sandbox" in pi.inner_text()
        assert pi.locator(".al-final").inner_text() == "done"
        page.close()
