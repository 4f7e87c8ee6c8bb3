"""PiHarness and ModelEndpoint on the real parts: pi from `npm ci`, its Node 22, the endpoint on
loopback, and the trained default model (agent-qwen3_5). No network. The one scripted peer stands in
for pi only to send responses out of order, which real pi does when it likes and cannot be made to
on cue."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from agentloop import events
from agentloop.harnesses.model_endpoint import ModelEndpoint
from agentloop.harnesses.pi import harness as pi_harness
from agentloop.harnesses.pi import session
from agentloop.harnesses.pi.command import NODE, PI_CLI
from agentloop.harnesses.pi.harness import PiHarness
from agentloop.harnesses.pi.menu import PiMenu
from agentloop.harnesses.pi.rpc import PiProcess
from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_backends.facts import model_specs
from agentloop.tools import TOOLS
from tests.conftest import agent_client, run_harness

QUESTION = "What is 48213 * 9127?"
ANSWER = str(48213 * 9127)


@pytest.fixture
def agent(agent_qwen3_5):
    """The session's backend on the embedded default model (pi's runs only read it)."""
    return agent_qwen3_5


@pytest.fixture(autouse=True)
def pi_installed():
    assert NODE.exists() and PI_CLI.exists(), "pi is not installed: run `npm ci` (make setup does)"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME of the test's own, with a user's pi dir that must never be read: its extension would
    leave a mark, its settings would turn pi's retries on."""
    home = tmp_path / "home"
    trap = home / ".pi" / "agent" / "extensions"
    trap.mkdir(parents=True)
    (trap / "trap.ts").write_text(
        'import { writeFileSync } from "node:fs";\n'
        "export default function () { writeFileSync("
        + json.dumps(str(home / "TRAP-LOADED"))
        + ', "read"); }\n'
    )
    (home / ".pi" / "agent" / "settings.json").write_text('{"retry": {"enabled": true}}')
    monkeypatch.setenv("HOME", str(home))
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    yield home
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before, (
        "pi wrote into the user's HOME"
    )


def run_pi(
    llm, folder: Path, decide=lambda e: True, on_event=None, history=(), **settings
) -> tuple[list[dict], PiHarness]:
    question = settings.pop("question", QUESTION)
    return run_harness(
        lambda emit: PiHarness(
            llm,
            list(history),
            question,
            RunSettings(
                **{"temperature": 0, "max_new_tokens": 128, "pi_tools": "book", **settings}
            ),
            emit,
            folder,
        ),
        decide,
        on_event,
    )


def only(evs, kind):
    return [e for e in evs if e["type"] == kind]


def assert_gone(harness: PiHarness) -> None:
    """pi and every process it started have ended: its process group is empty."""
    with pytest.raises(ProcessLookupError):
        os.killpg(harness.pi.proc.pid, 0)


def test_a_question_through_pi_arrives_as_the_books_events_in_order(agent, folder, home):
    evs, harness = run_pi(agent, folder)
    kinds = [e["type"] for e in evs if e["type"] not in ("token", "prefill")]
    assert kinds == [
        "run_start",
        "step_start",
        "request",
        "context",
        "model_end",
        "tool_call",
        "permission",
        "decision",
        "tool_result",
        "step_start",
        "request",
        "context",
        "model_end",
        "run_end",
    ]
    assert evs[0]["harness"] == "pi" and evs[0]["tools"] == ["run_python"]
    assert evs[0]["specs"] == model_specs(agent)  # this page's model: its Model tab has its facts
    # Every token of this page's model shows, with its probabilities, as in the built-in harness.
    tokens = only(evs, "token")
    assert tokens and all(0 < t["p"] <= 1 and len(t["top"]) == 5 for t in tokens)
    assert sum(e["n_tokens"] for e in only(evs, "model_end")) == len(tokens)
    # pi's usage is the endpoint's count; pi resends the whole conversation, and added_from marks
    # the new part.
    first, second = only(evs, "request")
    assert only(evs, "model_end")[0]["usage"]["input"] == only(evs, "context")[0]["n_tokens"]
    assert second["added_from"] == 2 and len(second["payload"]["messages"]) == 4
    assert second["payload"]["messages"][:2] == first["payload"]["messages"]
    # pi ran our tool after the reader approved, and the model answered from its result.
    call, result = only(evs, "tool_call")[0], only(evs, "tool_result")[0]
    assert (
        call["name"] == "run_python" and "48213" in call["args"]["code"] and not result["is_error"]
    )
    assert result["output"].strip() == ANSWER and result["call_id"] == call["call_id"]
    assert evs[-1]["stop_reason"] == "final" and ANSWER in evs[-1]["final"]
    # The conversation kept as SimpleHarness keeps it, for the server and a follow-up.
    assert [m["role"] for m in harness.messages] == ["user", "assistant", "tool", "assistant"]
    assert harness.messages[2]["name"] == "run_python" and ANSWER in harness.messages[-1]["content"]
    assert_gone(harness)


def test_a_follow_up_starts_pi_again_on_its_session_and_the_model_reads_it_all(agent, folder, home):
    first, harness = run_pi(agent, folder)
    assert first[-1]["stop_reason"] == "final" and ANSWER in first[-1]["final"]
    kept = folder / session.NAME  # pi's session, kept in the conversation's folder
    assert kept.is_file() and QUESTION in kept.read_text()
    follow_up = "Now add 1 to that number."
    second, _ = run_pi(agent, folder, history=harness.messages, question=follow_up)
    # The first request of the follow-up carries the whole conversation: pi read its session.
    sent = only(second, "request")[0]["payload"]["messages"]
    said = json.dumps(sent)
    assert QUESTION in said and ANSWER in said and follow_up in said
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    # And the model read it: the prompt the endpoint rendered holds the first question and answer.
    prompt = only(second, "context")[0]["prompt"]
    assert QUESTION in prompt and ANSWER in prompt and follow_up in prompt
    assert not only(second, "error") and second[-1]["type"] == "run_end"
    assert follow_up in kept.read_text()  # the session grew by the second question


def test_a_session_the_code_made_a_link_is_refused_and_never_written_through(
    agent, folder, home, tmp_path
):
    # The model's code can write /data: a link in place of the session must not make pi (or the
    # host) read or append to the file it points at.
    target = tmp_path / "host-file.txt"
    target.write_text("the host's own\n")
    (folder / session.NAME).symlink_to(target)
    evs, harness = run_pi(agent, folder, history=[{"role": "user", "content": "hi"}])
    error = only(evs, "error")[0]
    assert "cannot be continued" in error["message"]["en"] and "link" in error["message"]["en"]
    assert error["message"]["zh"] and evs[-1]["stop_reason"] == "error" and harness.pi is None
    # A new question writes its session over the link, not through it.
    evs, _ = run_pi(agent, folder, max_steps=1)
    assert target.read_text() == "the host's own\n"
    assert not (folder / session.NAME).is_symlink() and (folder / session.NAME).is_file()


def test_a_denied_call_reaches_the_model_as_a_refusal(agent, folder, home):
    evs, harness = run_pi(agent, folder, decide=lambda e: False, max_steps=3)
    assert only(evs, "decision")[0]["approved"] is False
    result = only(evs, "tool_result")[0]
    assert result["is_error"] and "denied" in result["output"]
    # The next request carries the refusal as the tool's result: that is what the model reads.
    tool_message = only(evs, "request")[1]["payload"]["messages"][-1]
    assert tool_message["role"] == "tool" and "denied" in json.dumps(tool_message)
    assert [p.name for p in folder.iterdir()] == [session.NAME] and evs[-1]["type"] == "run_end"
    assert_gone(harness)


def test_stop_ends_generation_within_one_token_and_pi_settles(agent, folder, home):
    tokens_at_stop: list[int] = []

    def stop_at_third_token(harness, event):
        if event["type"] == "token" and event["index"] == 2 and not tokens_at_stop:
            tokens_at_stop.append(event["index"] + 1)
            harness.stop()

    evs, harness = run_pi(agent, folder, on_event=stop_at_third_token)
    assert len(only(evs, "token")) <= tokens_at_stop[0] + 1
    assert evs[-1]["type"] == "run_end" and evs[-1]["stop_reason"] == "user_stopped"
    assert not only(evs, "tool_call") and not only(evs, "error")
    assert_gone(harness)


def test_pi_killed_mid_turn_is_an_error_event_and_leaves_no_process(agent, folder, home):
    def kill_at_first_token(harness, event):
        if event["type"] == "token" and event["index"] == 0:
            os.kill(harness.pi.proc.pid, signal.SIGKILL)

    evs, harness = run_pi(agent, folder, on_event=kill_at_first_token)
    errors = only(evs, "error")
    assert (
        errors
        and "pi ended unexpectedly" in errors[0]["message"]["en"]
        and errors[0]["message"]["zh"]
    )
    assert evs[-1]["type"] == "run_end" and evs[-1]["stop_reason"] == "error"
    assert_gone(harness)


# -- ordering: a scripted peer in pi's place
# ------------------------------------------------------------------

PEER = textwrap.dedent("""
    import json, sys
    def out(record):
        sys.stdout.write(json.dumps(record) + "\\n"); sys.stdout.flush()
    prompt = json.loads(sys.stdin.readline())          # sent without waiting for its answer
    state = json.loads(sys.stdin.readline())
    out({"type": "agent_start"})
    out({"id": state["id"], "type": "response", "command": "get_state", "success": True,
         "data": {"n": 1}})
    out({"type": "turn_start"})
    out({"id": prompt["id"], "type": "response", "command": "prompt", "success": True})
    out({"type": "agent_settled", "aborted": False})
    sys.stdin.readline()
""")


def test_responses_out_of_order_are_matched_by_id(tmp_path):
    peer = PiProcess([sys.executable, "-c", PEER], tmp_path, dict(os.environ))
    try:
        prompt_id = peer.send("prompt", message="hi")
        assert peer.command("get_state") == {
            "n": 1
        }  # its own answer, though another command's was pending
        records: list[dict] = []
        while (
            len(records) < 3
        ):  # next_record is None when what came was a response (filed by id) or nothing
            record = peer.next_record(timeout=5)
            records += [record] if record else []
        assert [r["type"] for r in records] == ["agent_start", "turn_start", "agent_settled"]
        assert peer._responses[prompt_id]["command"] == "prompt"  # filed under its id when it came
    finally:
        peer.close()


# -- the endpoint alone, as an OpenAI client sees it
# ----------------------------------------------------------


@pytest.fixture
def endpoint(agent):
    got: list[dict] = []
    ep = ModelEndpoint(agent, RunSettings(temperature=0, max_new_tokens=128), got.append)
    ep.start()
    ep.got = got
    yield ep
    ep.close()


def chat(ep: ModelEndpoint, messages: list[dict], **extra) -> tuple[int, list[dict], str]:
    body = {
        "model": "agent-qwen3_5",
        "stream": True,
        "messages": messages,
        "tools": [TOOLS["run_python"].schema()],
        **extra,
    }
    with httpx.stream(
        "POST",
        ep.base_url + "/chat/completions",
        json=body,
        timeout=120,
        headers={"Authorization": f"Bearer {ep.secret}"},
    ) as r:
        if r.status_code != 200:
            return r.status_code, [], r.read().decode()
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return 200, [json.loads(line) for line in lines[:-1]], ""


def test_endpoint_streams_deltas_tool_calls_and_finish_reasons(endpoint):
    # The system prompt the toy was trained under, sent as a client sends its own (pi sends pi's): without
    # one the toy's second reply is not one it was trained to write, and it may call the tool again.
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    user = {"role": "user", "content": QUESTION}
    status, chunks, _ = chat(endpoint, [system, user])
    assert status == 200
    calls = [
        c
        for ch in chunks
        for choice in ch["choices"]
        for c in choice["delta"].get("tool_calls", [])
    ]
    finishes = [
        choice["finish_reason"]
        for ch in chunks
        for choice in ch["choices"]
        if choice["finish_reason"]
    ]
    assert (
        finishes == ["tool_calls"]
        and len(calls) == 1
        and calls[0]["function"]["name"] == "run_python"
    )
    code = json.loads(calls[0]["function"]["arguments"])["code"]
    assert chunks[-1]["usage"]["completion_tokens"] == len(only(endpoint.got, "token"))
    # The tool's result goes back as OpenAI messages; the model answers in content deltas and stops.
    assistant = {"role": "assistant", "content": "", "tool_calls": [calls[0]]}
    tool = {"role": "tool", "tool_call_id": calls[0]["id"], "content": ANSWER}
    status, chunks, _ = chat(endpoint, [system, user, assistant, tool])
    text = "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks if ch["choices"])
    assert ANSWER in text and chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert "48213" in code
    # The endpoint turned the request back into SimpleHarness's conversation: a dict of arguments,
    # the tool's name.
    assert endpoint.conversation[0] == {"role": "system", "content": SYSTEM_WITH_TOOLS}
    assert endpoint.conversation[2]["tool_calls"][0]["function"]["arguments"] == {"code": code}
    assert endpoint.conversation[3] == {
        "role": "tool",
        "name": "run_python",
        "tool_call_id": calls[0]["id"],
        "content": ANSWER,
    }
    assert only(endpoint.got, "context")[1]["added_from"] > 0
    # max_tokens reached: finish_reason "length".
    status, chunks, _ = chat(endpoint, [user], max_tokens=2)
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"


@pytest.mark.parametrize(
    "body, message",
    [
        ({"stream": True}, "`messages` must be a non-empty list"),
        (
            {"stream": False, "messages": [{"role": "user", "content": "hi"}]},
            "only streamed completions",
        ),
        (
            {"stream": True, "messages": [{"role": "wizard", "content": "hi"}]},
            "unknown role 'wizard'",
        ),
        (
            {"stream": True, "messages": [{"role": "tool", "tool_call_id": "x", "content": "1"}]},
            "answers no earlier",
        ),
        (
            {"stream": True, "messages": [{"role": "user", "content": "hi"}], "max_tokens": -1},
            "positive integer",
        ),
        (
            {"stream": True, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "an image must be a base64 data URL",
        ),
        (
            {"stream": True, "messages": [{"role": "system", "content": [{"type": "image_url"}]}]},
            "only text parts",
        ),
    ],
)
def test_endpoint_refuses_a_bad_request_with_a_clear_400(endpoint, body, message):
    r = httpx.post(
        endpoint.base_url + "/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {endpoint.secret}"},
    )
    assert r.status_code == 400 and message in r.json()["error"]["message"]
    assert not endpoint.got  # nothing was generated


def test_endpoint_serves_only_the_pi_it_started(endpoint):
    body = {"stream": True, "messages": [{"role": "user", "content": "hi"}]}
    url = endpoint.base_url + "/chat/completions"
    assert httpx.post(url, json=body).status_code == 401
    assert (
        httpx.post(url, json=body, headers={"Authorization": "Bearer guessed"}).status_code == 401
    )
    from_a_page = {"Authorization": f"Bearer {endpoint.secret}", "Origin": "http://127.0.0.1:8000"}
    assert httpx.post(url, json=body, headers=from_a_page).status_code == 403
    r = httpx.post(url, content=b"not json", headers={"Authorization": f"Bearer {endpoint.secret}"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
    assert not endpoint.got


def test_endpoint_stops_generating_soon_after_the_client_goes_away(endpoint):
    body = {
        "stream": True,
        "messages": [{"role": "user", "content": "Hello there!"}],
        "max_tokens": 128,
    }
    with httpx.stream(
        "POST",
        endpoint.base_url + "/chat/completions",
        json=body,
        timeout=60,
        headers={"Authorization": f"Bearer {endpoint.secret}"},
    ) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                at_close = len(only(endpoint.got, "token"))
                break
    for _ in range(200):  # the handler finishes on its own thread
        if endpoint.done:
            break
        threading.Event().wait(0.05)
    done = endpoint.done[1]
    # The close is seen at the next token; one more may have been on its way while we counted.
    assert done["finish"] == "user_stopped" and done["n_tokens"] <= at_close + 2


def test_cli_runs_a_question_through_pi(home, tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentloop",
            "run",
            QUESTION,
            "--harness",
            "pi",
            "--pi-tools",
            "book",
            "--yes",
            "--json",
            "--temperature",
            "0",
            "--folder",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    evs = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.returncode == 0, r.stderr[-2000:]
    assert (
        evs[0]["harness"] == "pi"
        and evs[-1]["stop_reason"] == "final"
        and ANSWER in evs[-1]["final"]
    )


def test_pis_own_models_menu_says_plainly_when_pi_has_no_credentials(home, monkeypatch):
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    now = [0.0]
    pi_menu = PiMenu(clock=lambda: now[0])
    menu = pi_menu.models()
    assert (
        menu["models"] == [] and "no credentials" in menu["message"]["en"] and menu["message"]["zh"]
    )
    # With a key in the environment, pi lists that provider's models (listing them reaches no
    # network).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
    assert pi_menu.models() is menu  # asked at most once a minute
    now[0] = 10**9
    later = pi_menu.models()
    assert later["message"] is None and later["models"]
    assert all(
        m["provider"] == "anthropic" and m["id"].startswith("anthropic/") for m in later["models"]
    )


def test_chapter_16_recordings_show_the_same_prompts_in_both_harnesses():
    # Chapter 16 says so: with pi's system prompt replaced by agentloop's, the model reads the same
    # text at every step in both loops, so greedy decoding writes the same tokens.
    runs = Path(__file__).resolve().parent.parent / "docs" / "chapters" / "runs"
    simple, pi = (
        [json.loads(line) for line in (runs / f"ch16-{n}.jsonl").read_text().splitlines()]
        for n in ("simple", "pi")
    )
    assert simple[0]["harness"] == "simple" and pi[0]["harness"] == "pi"
    assert [e["prompt"] for e in only(simple, "context")] == [
        e["prompt"] for e in only(pi, "context")
    ]
    assert [e["id"] for e in only(simple, "token")] == [e["id"] for e in only(pi, "token")]
    assert simple[-1]["final"] == pi[-1]["final"] and ANSWER in pi[-1]["final"]


# -- the demo server's switches
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server_client(tmp_path_factory):
    with agent_client(tmp_path_factory) as client:
        yield client


def test_server_menu_of_pis_own_models_and_its_switches(server_client, home, monkeypatch):
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(key)
    # The server's PiMenu is its own: nothing has asked it before, so it asks pi now.
    menu = server_client.get("/api/pi/models").json()
    assert menu["models"] == [] and "no credentials" in menu["message"]["en"]
    bad = server_client.post("/api/runs", {"question": "hi", "settings": {"harness": "emacs"}})
    assert bad.status_code == 422 and bad.json()["type"] == "error"
    bad = server_client.post("/api/runs", {"question": "hi", "settings": {"pi_model": "no slash"}})
    assert bad.status_code == 422


def test_server_runs_pi_and_stops_it(server_client, home):
    run_id = server_client.start_run(
        QUESTION, {"harness": "pi", "pi_tools": "book", "temperature": 0, "max_new_tokens": 128}
    )
    got = []
    for event in server_client.run_events(run_id):
        got.append(event)
        if event["type"] == "token" and event["index"] == 1:
            assert server_client.post(f"/api/runs/{run_id}/stop", {}).json()["ok"]
    assert got[0]["harness"] == "pi" and only(got, "request")
    # Stopped in the first step, before the model finished writing its tool call (the harness-level
    # test above counts the tokens after stop() itself; here an HTTP round trip comes in between).
    assert got[-1]["stop_reason"] == "user_stopped" and not only(got, "tool_call")
    assert only(got, "model_end")[0]["finish"] == "user_stopped"


def test_pis_own_model_unreachable_is_an_error_event(home, folder, monkeypatch):
    # One of pi's own providers, with a key but no way out: pi's HTTP client honours HTTPS_PROXY, so
    # the request goes to a closed port on loopback and fails there (no traffic leaves the machine).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    got: list[dict] = []
    settings = RunSettings(pi_model="anthropic/claude-haiku-4-5", time_limit_s=60)
    harness = PiHarness(
        None, [], "Hello", settings, lambda e: (events.check(e), got.append(e)), folder
    )
    harness.run()
    assert got[0]["model"] == "anthropic/claude-haiku-4-5" and got[0]["settings"]["harness"] == "pi"
    assert "specs" not in got[0]  # pi's own model is its provider's: nothing to tell of it here
    assert only(got, "request") and not only(got, "token")  # nothing ran here
    error = only(got, "error")[0]
    assert "127.0.0.1:9" in error["message"]["en"] and error["message"]["zh"]
    assert got[-1]["type"] == "run_end" and got[-1]["stop_reason"] == "error"
    assert_gone(harness)


def test_a_hung_pi_is_an_error_event_and_leaves_no_process(agent, folder, home, monkeypatch):
    # pi frozen (SIGSTOP) in the middle of a step, then the reader stops the run: pi cannot settle,
    # so after SETTLE_S the run ends with an error, and the frozen process group is killed all the
    # same.
    monkeypatch.setattr(pi_harness, "SETTLE_S", 2.0)

    def freeze_then_stop(harness, event):
        if event["type"] == "token" and event["index"] == 0:
            os.kill(harness.pi.proc.pid, signal.SIGSTOP)
            harness.stop()

    evs, harness = run_pi(agent, folder, on_event=freeze_then_stop)
    errors = only(evs, "error")
    assert errors and "did not settle" in errors[0]["message"]["en"]
    assert evs[-1]["type"] == "run_end" and evs[-1]["stop_reason"] == "error"
    assert_gone(harness)
