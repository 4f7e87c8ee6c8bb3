"""The demo server end to end: a real uvicorn on a free port, the real tiny models, real HTTP and SSE.

Random tiny models rarely call a tool, so the runs here force the model's output (the server's teaching and
testing aid, on with allow_forced); the model still scores every token and the harness does everything else.
"""

from __future__ import annotations

import html
import json
import re
import socket
import threading
import time

import pytest

from agentloop import events
from agentloop.model_backends import model_folder
from agentloop.model_families import FAMILIES
from demo_server.app import create_app
from demo_server.client import Client, ServerThread, free_port
from tests.conftest import APPROVED_RUN, TINY, built, demo_server
from tests.fake_hub import ORG, UNSUPPORTED

FORCED = {  # step 1 a run_python call, step 2 the answer, each ending with the family's stop token
    key: [
        family.write_call("run_python", {"code": "print(2**64)"}),
        "The answer is 18446744073709551616." + family.stop_pieces[0],
    ]
    for key, family in FAMILIES.items()
}
SETTINGS = {"max_new_tokens": 64, "max_steps": 3, "temperature": 0, "tools": ["run_python"]}
ORPHAN_S = 2.0
LONG = " ".join(["counting"] * 600)  # a long forced output, to stop or to collide with


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    built(*TINY.values())
    with demo_server(
        tmp_path_factory.mktemp("book") / "site",
        model=str(TINY["qwen3_5"]),
        allow_forced=True,
        device="cpu",
        orphan_s=ORPHAN_S,
    ) as srv:
        yield srv


@pytest.fixture
def client(server):
    c = Client(server.url)
    assert c.token, "the served page carries the token"
    ready(c)
    yield c
    c.close()


def ready(c: Client, model: str = "tiny-qwen3_5") -> dict:
    """Wait for any run to end and any load to finish; then the model is `model` (loaded again if not)."""
    deadline = time.monotonic() + 60
    while (status := c.status())["busy"] or status["loading"]:
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    if status["model"] != model:
        assert c.post("/api/models/load", {"model": model}).status_code == 202
        status = c.wait_ready()
        assert status["model"] == model, status
    return status


def run_through(c: Client, run_id: str, approve: bool | None = None) -> list[dict]:
    """A run's events to run_end, answering each permission with `approve`."""
    seen = []
    for e in c.run_events(run_id):
        seen.append(e)
        if e["type"] == "permission" and approve is not None:
            r = c.post(
                f"/api/runs/{run_id}/decision", {"call_id": e["call_id"], "approve": approve}
            )
            assert r.status_code == 200, r.text
    return seen


def check_run(evs: list[dict]) -> None:
    """Every event is one of agentloop/events.py's, the run starts with run_start and ends with run_end."""
    for e in evs:
        events.check(e)
    assert evs[0]["type"] == "run_start" and evs[-1]["type"] == "run_end"
    assert [e["type"] for e in evs].count("run_end") == 1


def types(evs: list[dict]) -> list[str]:
    return [e["type"] for e in evs if e["type"] != "token"]


def wait_for(predicate, timeout: float = 20, what: str = "a condition"):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


# -- status and menu -------------------------------------------------------------------------------------------------


def test_status_describes_the_one_model(client):
    s = client.status()
    assert (
        s["ok"]
        and s["model"] == "tiny-qwen3_5"
        and s["family"] == "qwen3_5"
        and s["harness"] == "simple"
    )
    assert s["backend"] == "transformers" and s["device"] == "cpu" and s["dtype"] == "float32"
    # Why float32 (model_backends/precision.py): for a toy, the same on every CPU.
    assert s["precision"] == "tiny"
    assert s["busy"] is False and s["loading"] is False
    d = s["defaults"]
    assert (d["temperature"], d["top_p"], d["top_k"]) == (
        1.0,
        1.0,
        20,
    )  # the checkpoint's recommended sampling
    assert {"max_steps", "max_new_tokens", "thinking", "use_tools", "auto_approve"} <= set(d)
    # The tools the live form's checklist offers: the harness's registry, in its order.
    from agentloop.tools import TOOLS

    assert s["tools"] == [{"name": t.name, "description": t.description} for t in TOOLS.values()]
    assert set(d["tools"]) <= set(TOOLS)
    specs = s["specs"]
    config = json.loads((TINY["qwen3_5"] / "config.json").read_text())["text_config"]
    assert specs["layers"] == config["num_hidden_layers"] == len(specs["layer_types"])
    assert specs["layer_type_counts"] == {"linear_attention": 3, "full_attention": 1}
    assert (specs["hidden_size"], specs["heads"], specs["kv_heads"], specs["vocabulary"]) == (
        config["hidden_size"],
        config["num_attention_heads"],
        config["num_key_value_heads"],
        config["vocab_size"],
    )
    assert specs["context_length"] == 4096 and specs["parameters"] > 1_000_000


def test_run_start_carries_what_the_status_says_of_its_model(client):
    """Issue 47: run_start carries the model's facts from the same function as GET /api/status
    (model_backends/facts.py), so a recording's Model tab shows what the status showed when it ran."""
    status = client.status()
    run_id = client.start_run("Hi", {**SETTINGS, "max_steps": 1}, FORCED["qwen3_5"][1:])
    start = run_through(client, run_id)[0]
    assert start["specs"] == status["specs"] and start["model"] == status["model"]
    assert [start[k] for k in ("backend", "device", "dtype", "precision")] == [
        status[k] for k in ("backend", "device", "dtype", "precision")
    ]
    assert start["media"] == {k: status["media"][k] for k in ("reads", "refused")}
    assert start["defaults"] == {
        k: status["defaults"][k] for k in ("temperature", "top_p", "top_k")
    }


def test_the_token_is_only_in_the_pages(client):
    page = client.get("/").text
    assert f'<meta name="agentloop-token" content="{client.token}">' in page
    for path in ("/api/status", "/api/models", "/api/openapi.json", "/api/models/load/events"):
        assert client.token not in client.get(path).text, path


def test_the_pages_carry_the_api_table_of_every_route(client):
    """The contract with the panels: {route_name: [METHOD, path]} for every route under /api, as OpenAPI has it."""
    page = client.get("/").text
    found = re.search(r'<meta name="agentloop-api" content="([^"]+)">', page)
    assert found, page[:500]
    table = json.loads(html.unescape(found.group(1)))
    openapi = client.get("/api/openapi.json").json()["paths"]
    described = {(method.upper(), path) for path, item in openapi.items() for method in item}
    assert {tuple(entry) for entry in table.values()} == described
    for name in (
        "status",
        "models",
        "load",
        "load_events",
        "start_run",
        "run_events",
        "decision",
        "stop",
        "render",
        "tokenize",
        "next_token",
    ):
        assert name in table, name
    assert table["run_events"] == ["GET", "/api/runs/{run_id}/events"]
    assert table["start_run"] == ["POST", "/api/runs"]


def test_model_menu(client):
    menu = client.get("/api/models").json()
    by_id = {m["id"]: m for m in menu["models"]}
    assert menu["current"] == "tiny-qwen3_5" and by_id["tiny-qwen3_5"]["current"]
    assert by_id["tiny-gemma4"]["family"] == "gemma4" and by_id["tiny-gemma4"]["kind"] == "tiny"
    assert by_id["tiny-gemma4"]["downloaded"] and by_id["tiny-gemma4"]["parameters"] > 0
    assert "tiny-gemma4-assistant" not in by_id  # the MTP drafter is no model to chat with
    for real, family in (("Qwen/Qwen3.5-0.8B", "qwen3_5"), ("google/gemma-4-E2B-it", "gemma4")):
        assert by_id[real]["kind"] == "real" and by_id[real]["family"] == family
        assert (
            by_id[real]["downloaded"]
            == (model_folder.MODELS_DIR / f"models--{real.replace('/', '--')}").is_dir()
        )


# -- runs ------------------------------------------------------------------------------------------------------------


def test_a_run_approved_end_to_end_streams_exactly_the_event_vocabulary(client):
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    raw, evs = [], []
    for message in client.stream(f"/api/runs/{run_id}/events"):
        raw.append(message)
        if message.startswith(":"):
            continue
        # One `data:` line of JSON per message, no `event:` field.
        assert re.fullmatch(r"data: \{[^\n]*\}\n\n", message), message
        evs.append(json.loads(message[6:]))
        if evs[-1]["type"] == "permission":
            assert client.post(
                f"/api/runs/{run_id}/decision", {"call_id": evs[-1]["call_id"], "approve": True}
            ).json() == {"ok": True}
    check_run(evs)
    assert (
        evs[0]["run_id"] == run_id
        and evs[0]["model"] == "tiny-qwen3_5"
        and evs[0]["tools"] == ["run_python"]
    )
    assert types(evs) == APPROVED_RUN
    call = next(e for e in evs if e["type"] == "tool_call")
    assert call["name"] == "run_python" and call["args"] == {"code": "print(2**64)"}
    decision = next(e for e in evs if e["type"] == "decision")
    assert decision["approved"] is True and decision["by"] == "reader"
    result = next(e for e in evs if e["type"] == "tool_result")
    assert result["output"].strip() == "18446744073709551616" and not result["is_error"]
    tokens = [e for e in evs if e["type"] == "token"]
    assert tokens and all(t["forced"] for t in tokens)
    assert (
        evs[-1]["stop_reason"] == "final"
        and evs[-1]["final"] == "The answer is 18446744073709551616."
    )
    # A late reader gets the same run, byte for byte, from run_start.
    assert list(client.stream(f"/api/runs/{run_id}/events")) == [
        m for m in raw if not m.startswith(":")
    ]
    # The run is over: a decision now is refused, a stop changes nothing.
    assert (
        client.post(f"/api/runs/{run_id}/decision", {"call_id": "1.0", "approve": True}).status_code
        == 409
    )
    assert client.post(f"/api/runs/{run_id}/stop").status_code == 200


def test_a_denied_call_is_not_run(client):
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    evs = run_through(client, run_id, approve=False)
    check_run(evs)
    decision = next(e for e in evs if e["type"] == "decision")
    assert decision["approved"] is False
    result = next(e for e in evs if e["type"] == "tool_result")
    assert result["is_error"] and "denied" in result["output"]
    assert (
        evs[-1]["stop_reason"] == "final"
        and evs[-1]["final"] == "The answer is 18446744073709551616."
    )


def test_two_clients_read_the_same_run_and_a_second_run_is_refused(server, client):
    other = Client(server.url)
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    streams: dict[str, list[str]] = {}

    def read(name: str, c: Client) -> None:
        streams[name] = [m for m in c.stream(f"/api/runs/{run_id}/events") if not m.startswith(":")]

    reader = threading.Thread(target=read, args=("other", other))
    reader.start()
    evs = []
    for e in client.run_events(run_id):
        evs.append(e)
        if e["type"] == "permission":
            # The run waits for its permission: it still holds the one model, for every tab.
            refused = other.post("/api/runs", {"question": "And 3**40?", "settings": SETTINGS})
            assert refused.status_code == 409
            body = refused.json()
            assert (
                body["type"] == "error"
                and "one run at a time" in body["message"]["en"]
                and body["message"]["zh"]
            )
            assert body["detail"] == {"active_run": run_id}
            assert other.status()["busy"] is True
            switch = other.post("/api/models/load", {"model": "tiny-gemma4"})
            assert switch.status_code == 409 and run_id in switch.json()["message"]["en"]
            client.post(f"/api/runs/{run_id}/decision", {"call_id": e["call_id"], "approve": True})
    reader.join(30)
    check_run(evs)
    assert [json.loads(m[6:]) for m in streams["other"]] == evs
    assert streams["other"] == [
        m for m in client.stream(f"/api/runs/{run_id}/events") if not m.startswith(":")
    ]
    assert other.status()["busy"] is False
    other.close()


def test_stop_ends_a_generating_run(server, client):
    other = Client(server.url)
    run_id = client.start_run("Count.", {**SETTINGS, "max_new_tokens": 1000}, [LONG])
    evs = []
    for e in client.run_events(run_id):
        evs.append(e)
        if e["type"] == "token" and e["index"] == 3:
            # While the model generates, nothing else runs on it.
            assert other.post("/api/runs", {"question": "Hi"}).status_code == 409
            busy = other.post("/api/next-token", {"prompt": "Hello"})
            assert busy.status_code == 409 and busy.json()["message"]["en"]
            assert client.post(f"/api/runs/{run_id}/stop", {}).json() == {"ok": True}
    check_run(evs)
    model_end = next(e for e in evs if e["type"] == "model_end")
    assert model_end["finish"] == "user_stopped" and model_end["n_tokens"] < 1000
    assert evs[-1]["stop_reason"] == "user_stopped"
    assert client.status()["busy"] is False
    other.close()


def test_stop_while_waiting_for_permission(client):
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    evs = []
    for e in client.run_events(run_id):
        evs.append(e)
        if e["type"] == "permission":
            client.post(f"/api/runs/{run_id}/stop")
    check_run(evs)
    assert evs[-1]["stop_reason"] == "user_stopped" and "tool_result" not in types(evs)


def test_next_goes_on_from_a_pause_and_stop_ends_one(client):
    """A step-by-step run (pace step) sends `paused` before each stage and waits for POST /next; Stop
    ends the wait. Refusals: Next for a run that is not paused or has ended (409), an unknown run (404), a
    pace that is not one (422), a pace for pi's own models (400); each says so in both languages."""
    settings = {**SETTINGS, "pace": "step", "auto_approve": True}
    run_id = client.start_run("What is 2**64?", settings, FORCED["qwen3_5"])
    evs = []
    for e in client.run_events(run_id):
        evs.append(e)
        if e["type"] == "paused" and len(types(evs)) < 8:
            assert client.post(f"/api/runs/{run_id}/next", {}).json() == {"ok": True}
        elif e["type"] == "paused":
            assert client.post(f"/api/runs/{run_id}/stop").json() == {"ok": True}
    check_run(evs)
    paused = [e for e in evs if e["type"] == "paused"]
    assert [e["stage"] for e in paused[:2]] == ["prefill", "token"] and paused[1]["index"] == 0
    assert evs[-1]["stop_reason"] == "user_stopped" and evs[-2]["type"] == "model_end"
    assert evs[0]["settings"]["pace"] == "step"
    ended = client.post(f"/api/runs/{run_id}/next", {})
    assert ended.status_code == 409 and ended.json()["message"]["zh"]

    # Waiting for a permission is not a pause: Next is refused, and Next at full pace from here on
    # (pace full) is taken only from a pause.
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    for e in client.run_events(run_id):
        if e["type"] == "permission":
            r = client.post(f"/api/runs/{run_id}/next", {"pace": "full"})
            assert r.status_code == 409 and "not paused" in r.json()["message"]["en"]
            client.post(f"/api/runs/{run_id}/stop")
    assert client.post("/api/runs/000000000000/next", {}).status_code == 404
    r = client.post(f"/api/runs/{run_id}/next", {"pace": "fast"})
    assert r.status_code == 422 and "pace" in r.json()["message"]["en"]
    r = client.post("/api/runs", {"question": "Hi", "settings": {"pace": "fast"}})
    assert r.status_code == 422 and "settings.pace" in r.json()["message"]["en"]
    pi_own = {"harness": "pi", "pi_model": "openai/gpt-4o", "pace": "step"}
    r = client.post("/api/runs", {"question": "Hi", "settings": pi_own})
    assert r.status_code == 400 and "pace full" in r.json()["message"]["en"]
    assert r.json()["message"]["zh"] and not client.status()["busy"]


def test_a_paused_run_nobody_reads_is_stopped(server, client):
    """As a permission nobody watches: a closed tab cannot hold the model at a pause either."""
    run_id = client.start_run("Hi", {**SETTINGS, "pace": "step"}, FORCED["qwen3_5"])
    for e in client.run_events(run_id):
        if e["type"] == "paused":
            break  # closes the connection while the run waits for Next
    other = Client(server.url)
    wait_for(
        lambda: not other.status()["busy"], timeout=ORPHAN_S + 10, what="the paused run to stop"
    )
    evs = list(other.run_events(run_id))
    check_run(evs)
    assert evs[-1]["stop_reason"] == "user_stopped" and "prefill" not in types(evs)
    other.close()


def test_a_client_leaving_mid_stream_breaks_nothing(server, client):
    # Leaving while the model generates: the run goes on to its end, and a new reader gets all of it.
    run_id = client.start_run(
        "What is 2**64?", {**SETTINGS, "auto_approve": True}, FORCED["qwen3_5"]
    )
    for e in client.run_events(run_id):
        if e["type"] == "token":
            break  # closes the connection mid-stream
    other = Client(server.url)
    evs = list(other.run_events(run_id))
    check_run(evs)
    assert evs[-1]["stop_reason"] == "final"
    assert next(e for e in evs if e["type"] == "decision")["by"] == "auto"

    # Leaving while the run waits for a permission nobody else watches: it is stopped after orphan_s, so a
    # closed tab cannot hold the model; the server goes on serving.
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    for e in client.run_events(run_id):
        if e["type"] == "permission":
            break
    left = time.monotonic()
    wait_for(
        lambda: not other.status()["busy"], timeout=ORPHAN_S + 10, what="the orphaned run to stop"
    )
    assert time.monotonic() - left >= ORPHAN_S - 0.5
    evs = list(other.run_events(run_id))
    check_run(evs)
    assert evs[-1]["stop_reason"] == "user_stopped"
    other.close()


def test_a_reader_that_stopped_reading_does_not_hold_the_model(server, client):
    # A real socket opens the run's stream and never reads from it: the permission's keep-alive padding fills
    # its buffers, the server's send waits, and after orphan_s the run is stopped as if no stream were open.
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    host, port = server.url.removeprefix("http://").split(":")
    silent = socket.create_connection((host, int(port)))
    silent.sendall(
        f"GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    )
    try:
        for e in client.run_events(run_id):
            if e["type"] == "permission":
                break  # the only reader left is the silent one
        asked = time.monotonic()
        wait_for(lambda: not client.status()["busy"], timeout=60, what="the unread run to stop")
        assert time.monotonic() - asked >= ORPHAN_S - 0.5
    finally:
        silent.close()
    evs = list(client.run_events(run_id))
    check_run(evs)
    assert evs[-1]["stop_reason"] == "user_stopped" and "tool_result" not in types(evs)


def test_a_reader_that_reads_keeps_the_permission_waiting(client):
    run_id = client.start_run("What is 2**64?", SETTINGS, FORCED["qwen3_5"])
    seen, permission = [], threading.Event()

    def read():  # reads everything, padding included, without answering
        for e in client.run_events(run_id):
            seen.append(e)
            if e["type"] == "permission":
                permission.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert permission.wait(30)
    time.sleep(ORPHAN_S * 3)
    assert client.status()["busy"], "a reader that keeps reading keeps the run"
    call_id = next(e for e in seen if e["type"] == "permission")["call_id"]
    other = Client(client.url)
    assert (
        other.post(
            f"/api/runs/{run_id}/decision", {"call_id": call_id, "approve": True}
        ).status_code
        == 200
    )
    reader.join(30)
    other.close()
    assert seen[-1]["type"] == "run_end" and seen[-1]["stop_reason"] == "final"


def test_kept_runs_are_bounded_by_count_and_by_events(server, client):
    from collections import OrderedDict

    from demo_server.model import forget_old_runs

    for _ in range(3):
        check_run(
            list(client.run_events(client.start_run("Hi", {"max_new_tokens": 2, "max_steps": 1})))
        )
    kept = server.server.config.app.state.current.runs
    assert 3 <= len(kept) <= 16  # KEEP_RUNS
    runs = OrderedDict(kept)
    newest = list(runs.values())[-2:]
    forget_old_runs(runs, keep_events=sum(len(r.log.events) for r in newest))
    assert list(runs.values()) == newest  # the oldest go first, until the events fit
    forget_old_runs(runs, keep_events=0)
    assert list(runs.values()) == newest[-1:]  # the newest run always stays
    forget_old_runs(kept := OrderedDict(kept), keep_runs=2)
    assert len(kept) == 2


def test_refusals_name_what_is_wrong(client):
    assert client.get("/api/runs/000000000000/events").status_code == 404
    r = client.post("/api/runs/000000000000/decision", {"call_id": "1.0", "approve": True})
    assert r.status_code == 404 and r.json()["type"] == "error"
    r = client.post(
        "/api/runs", {"question": "Hi", "settings": {"temperature": 9, "max_steps": 0, "colour": 1}}
    )
    assert r.status_code == 422
    en = r.json()["message"]["en"]
    assert "settings.temperature" in en and "settings.max_steps" in en and "settings.colour" in en
    zh = r.json()["message"]["zh"]  # said in Chinese, pydantic's bounds filled in
    assert "settings.colour：不接受此欄位" in zh and "settings.max_steps：須大於或等於 1" in zh, zh
    r = client.post("/api/runs", {"question": "   "})
    assert r.status_code == 422 and "question" in r.json()["message"]["en"]
    r = client.post("/api/runs", {"question": "Hi", "settings": {"tools": ["rm_rf"]}})
    assert r.status_code == 422 and "rm_rf" in r.json()["message"]["en"]
    r = client.post("/api/runs", {"question": "Hi", "settings": {"temperature": "NaN"}})
    assert r.status_code == 422
    r = client.http.post(
        "/api/runs",
        content=b"{not json",
        headers={"X-Agentloop-Token": client.token, "Content-Type": "application/json"},
    )
    assert r.status_code == 422 and r.json()["message"]["zh"]
    assert client.get("/api/nothing-here").status_code == 404
    assert client.post("/api/models/load", {"model": "../etc"}).status_code == 422
    assert client.post("/api/models/load", {"model": "tiny-nothing"}).status_code == 404
    assert client.status()["model"] == "tiny-qwen3_5"


STRICT_CASES = {  # what lax mode would convert, and the field the 422 names
    "a string for a boolean": ({"auto_approve": "yes"}, "settings.auto_approve"),
    "a true-ish string": ({"thinking": "true"}, "settings.thinking"),
    "a number for a boolean": ({"use_tools": 1}, "settings.use_tools"),
    "a string for an integer": ({"max_steps": "3"}, "settings.max_steps"),
    "a float for an integer": ({"top_k": 20.0}, "settings.top_k"),
    "a string for a float": ({"temperature": "0.5"}, "settings.temperature"),
    "a boolean for a float": ({"top_p": True}, "settings.top_p"),
}


@pytest.mark.parametrize("case", STRICT_CASES)
def test_types_are_strict_at_the_api(client, case):
    settings, field = STRICT_CASES[case]
    r = client.post("/api/runs", {"question": "Hi", "settings": settings})
    assert r.status_code == 422, case
    assert field in r.json()["message"]["en"] and r.json()["message"]["zh"]
    assert not client.status()["busy"]


def test_strict_types_still_take_an_integer_for_a_float_and_check_the_decision(client):
    r = client.post("/api/runs/000000000000/decision", {"call_id": "1.0", "approve": "yes"})
    assert r.status_code == 422 and "approve" in r.json()["message"]["en"]
    run_id = client.start_run(
        "Hi", {"max_new_tokens": 2, "max_steps": 1, "temperature": 1, "top_p": 1}
    )
    evs = list(client.run_events(run_id))
    check_run(evs)


def test_forced_continuations_need_the_flag(tmp_path):
    port = free_port()
    app = create_app(model="tiny-nothing", site_dir=tmp_path, port=port)  # no model: nothing loads
    srv = ServerThread(app, port).start()
    try:
        c = Client(srv.url)
        status = c.status()
        assert (
            status["ok"] is False
            and status["model"] is None
            and "tiny-nothing" in status["error"]["en"]
        )
        r = c.post("/api/runs", {"question": "Hi", "forced": ["Hello<|im_end|>"]})
        assert r.status_code == 403 and "AGENTLOOP_ALLOW_FORCED" in r.json()["message"]["en"]
        r = c.post("/api/runs", {"question": "Hi"})
        assert r.status_code == 409 and "No model is loaded" in r.json()["message"]["en"]
        c.close()
    finally:
        srv.stop()


# -- one stage alone -----------------------------------------------------------------------------------------------


def test_render_tokenize_and_next_token(client):
    messages = [{"role": "user", "content": "What is 2**64?"}]
    r = client.post(
        "/api/render", {"messages": messages, "tools": ["run_python"], "thinking": False}
    )
    assert r.status_code == 200, r.text
    rendered = r.json()
    assert "run_python" in rendered["prompt"]
    assert rendered["prompt"].endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )  # thinking off
    assert rendered["n_tokens"] > 10
    no_prompt = client.post(
        "/api/render", {"messages": messages, "generation_prompt": False}
    ).json()["prompt"]
    assert "run_python" not in no_prompt and not no_prompt.endswith("assistant\n")
    assert (
        client.post("/api/render", {"messages": [{"role": "robot", "content": "x"}]}).status_code
        == 422
    )

    text = "Hello 世界 <|im_end|>"
    tok = client.post("/api/tokenize", {"text": text}).json()
    assert len(tok["ids"]) == len(tok["pieces"]) == len(tok["texts"]) == tok["n_tokens"]
    assert (
        "".join(tok["texts"]) == text
        and tok["special"][-1] is True
        and not any(tok["special"][:-1])
        and tok["family"] == client.status()["family"]
    )

    greedy = client.post(
        "/api/next-token", {"prompt": rendered["prompt"], "temperature": 0, "top_n": 8}
    ).json()
    assert (
        greedy["n_tokens"] == rendered["n_tokens"]
        and greedy["kept"] == 1
        and len(greedy["top"]) == 8
    )
    ps = [c["p"] for c in greedy["top"]]
    assert ps == sorted(ps, reverse=True) and 0 < sum(ps) <= 1 + 1e-6
    assert (
        greedy["top"][0]["kept"]
        and greedy["top"][0]["p_kept"] == 1.0
        and not greedy["top"][1]["kept"]
    )
    assert greedy["sampled"]["id"] == greedy["top"][0]["id"]

    top3 = client.post(
        "/api/next-token",
        {
            "messages": messages,
            "tools": ["run_python"],
            "temperature": 1,
            "top_k": 3,
            "top_p": 1,
            "top_n": 5,
        },
    ).json()
    assert top3["prompt"] == rendered["prompt"] and top3["kept"] == 3
    assert [c["kept"] for c in top3["top"]] == [True] * 3 + [False] * 2
    assert (
        abs(sum(c["p_kept"] for c in top3["top"][:3]) - 1) < 1e-5 and top3["top"][3]["p_kept"] == 0
    )
    assert top3["sampled"]["id"] in [c["id"] for c in top3["top"][:3]]
    nucleus = client.post(
        "/api/next-token", {"prompt": "Hello", "temperature": 1, "top_k": 0, "top_p": 0.0}
    ).json()
    assert nucleus["kept"] == 1  # top-p keeps at least the most likely token

    for bad in (
        {"prompt": "x", "messages": messages},
        {},
        {"prompt": ""},
        {"prompt": "x", "top_n": 0},
        {"prompt": "x", "top_k": -1},
    ):
        r = client.post("/api/next-token", bad)
        assert r.status_code == 422, (bad, r.text)


# -- the model: one for every tab ------------------------------------------------------------------------------------


def test_a_model_switch_is_seen_by_every_client(server, client):
    other = Client(server.url)
    r = client.post("/api/models/load", {"model": "tiny-gemma4"})
    assert r.status_code == 202 and r.json()["model"] == "tiny-gemma4"
    again = other.post("/api/models/load", {"model": "tiny-qwen3_5"})
    assert again.status_code == 409 and "loading" in again.json()["message"]["en"]
    assert other.post("/api/runs", {"question": "Hi"}).status_code == 409
    load = list(other.events("/api/models/load/events"))
    assert [e["type"] for e in load] == ["load_start", "family", "loading", "ready"]
    assert load[0]["load_id"] == r.json()["load_id"] and load[1]["family"] == "gemma4"
    for c in (client, other):
        s = c.status()
        assert (s["model"], s["family"], s["loading"]) == ("tiny-gemma4", "gemma4", False)
        assert (
            s["defaults"]["top_k"] == 64
            and s["specs"]["layer_type_counts"]["sliding_attention"] == 3
        )
        assert s["mtp"] is True  # tiny-gemma4-assistant, its drafter, is beside it
    assert other.get("/api/models").json()["current"] == "tiny-gemma4"

    run_id = other.start_run("What is 2**64?", {**SETTINGS, "auto_approve": True}, FORCED["gemma4"])
    evs = list(client.run_events(run_id))
    check_run(evs)
    assert evs[0]["model"] == "tiny-gemma4" and evs[0]["family"] == "gemma4"
    assert (
        next(e for e in evs if e["type"] == "tool_result")["output"].strip()
        == "18446744073709551616"
    )
    assert evs[-1]["final"] == "The answer is 18446744073709551616."
    # The one-stage calls follow the switch too.
    prompt = other.post("/api/render", {"messages": [{"role": "user", "content": "Hi"}]}).json()[
        "prompt"
    ]
    assert "<|turn>user" in prompt
    nxt = other.post("/api/next-token", {"prompt": prompt, "temperature": 0, "top_n": 3}).json()
    assert nxt["vocabulary"] == s["specs"]["vocabulary"] and nxt["top"][0]["kept"]
    # MTP: the first run that asks for it loads the drafter beside the model (tiny-gemma4-assistant).
    evs = list(other.run_events(other.start_run("Hi", {**SETTINGS, "max_steps": 1, "mtp": True})))
    check_run(evs)
    ends = [e for e in evs if e["type"] == "model_end"]
    assert ends and all(e["mtp"]["forwards"] >= 1 and e["mtp"]["drafted"] >= 0 for e in ends)

    ready(client, "tiny-qwen3_5")
    assert other.status()["family"] == "qwen3_5"
    # Qwen3.5 has no drafter here: the status says so (the panels offer no MTP switch), a run asking for it
    # is refused before it starts, and the server goes on serving.
    assert other.status()["mtp"] is False
    r = other.post("/api/runs", {"question": "Hi", "settings": {**SETTINGS, "mtp": True}})
    assert (
        r.status_code == 400
        and "no MTP drafter" in r.json()["message"]["en"]
        and r.json()["message"]["zh"]
    )
    assert other.status()["model"] == "tiny-qwen3_5" and other.status()["error"] is None
    assert not other.status()["busy"]
    other.close()


def test_loading_from_the_hub_reports_progress_and_refuses_an_unknown_family_first(
    client, fake_hub, tmp_path, monkeypatch
):
    with monkeypatch.context() as m:
        m.setattr(model_folder, "MODELS_DIR", tmp_path / "models")
        assert client.post("/api/models/load", {"model": UNSUPPORTED}).status_code == 202
        load = list(client.events("/api/models/load/events"))
        assert [e["type"] for e in load] == ["load_start", "error"]
        assert "llama_unknown" in load[-1]["message"]["en"] and load[-1]["message"]["zh"]
        assert fake_hub.fetched(UNSUPPORTED) == [
            "config.json"
        ]  # refused before any weights came down
        assert client.status()["model"] == "tiny-qwen3_5"  # the model in use stays

        model = f"{ORG}/tiny-qwen3_5"
        assert client.post("/api/models/load", {"model": model}).status_code == 202
        load = list(client.events("/api/models/load/events"))
        kinds = [e["type"] for e in load]
        assert kinds[:2] == ["load_start", "family"] and kinds[-2:] == ["loading", "ready"], kinds
        downloads = [e for e in load if e["type"] == "download"]
        assert downloads, kinds
        last = downloads[-1]
        assert last["bytes_done"] == last["bytes_total"] > 1_000_000
        assert last["files_done"] == last["files_total"] > 1
        s = client.status()
        assert s["model"] == model and s["family"] == "qwen3_5"
    ready(client, "tiny-qwen3_5")
