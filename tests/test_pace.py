"""A run at the reader's pace (settings.pace; agentloop/harnesses/pace.py, Reader.hold): step by step the run
waits before the prefill, each token, the parse and each approved call until the reader's Next, Stop ends any
such wait at once, a slow run waits before each token, and none of those waits is counted in the model's
timings. On the tiny models, with their output forced (backend.force), through SimpleHarness and through the
endpoint pi talks to; the demo server's endpoint for Next is in tests/test_server.py."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agentloop import events
from agentloop.harnesses.base import Reader
from agentloop.harnesses.model_endpoint import ModelEndpoint
from agentloop.harnesses.pace import without_held
from agentloop.harnesses.settings import SLOW_S, RunSettings
from agentloop.harnesses.simple_harness import SimpleHarness
from agentloop.model_families import FAMILIES
from tests.conftest import run_harness

HELD_S = (
    1.0  # how long the test holds a paused run before its Next: far longer than a tiny model's step
)


def call(family: str, code: str) -> str:
    return FAMILIES[family].write_call("run_python", {"code": code})


def answer(family: str, text: str) -> str:
    return text + FAMILIES[family].stop_pieces[0]


def only(evs: list[dict], kind: str) -> list[dict]:
    return [e for e in evs if e["type"] == kind]


def stepped(backend, outputs: list[str], folder, on_pause, **settings) -> list[dict]:
    """A step-by-step run of `outputs` (forced, one per step); `on_pause(harness, event)` answers each
    `paused` event, from a thread of its own as a reader's click is."""
    for text in outputs:
        backend.force(text)

    def watch(harness, event):
        if event["type"] == "paused":
            threading.Thread(target=on_pause, args=(harness, event)).start()

    got, _ = run_harness(
        lambda emit: SimpleHarness(
            backend,
            [],
            "What is 2**64?",
            RunSettings(
                **{"max_new_tokens": 200, "pace": "step", "auto_approve": True, **settings}
            ),
            emit,
            files=folder,
        ),
        on_event=watch,
    )
    backend.clear_forced()  # what a stopped run did not reach is not the next run's
    return got


def press_next(harness, event) -> None:
    assert harness.reader.next()


def stage_of(event: dict) -> tuple:
    return (event["step"], event["stage"], event.get("index", event.get("call_id")))


def test_step_by_step_the_run_waits_before_each_stage_and_goes_on_at_next(backend, folder):
    f = backend.family.key
    evs = stepped(backend, [call(f, "print(2**64)"), answer(f, "It is 2**64.")], folder, press_next)
    assert evs[-1]["stop_reason"] == "final"
    tokens = {step: len([e for e in only(evs, "token") if e["step"] == step]) for step in (1, 2)}
    expected = [
        *[(1, "prefill", None)],
        *[(1, "token", i) for i in range(tokens[1])],
        (1, "parse", None),
        (1, "call", "1.0"),
        (2, "prefill", None),
        *[(2, "token", i) for i in range(tokens[2])],
        (2, "parse", None),
    ]
    assert [stage_of(e) for e in only(evs, "paused")] == expected
    # Each pause comes right before what it holds back: the prefill, that token, model_end (the parse is
    # what the loop reads next; the step's end comes with it) and the call's result.
    follows = {"prefill": "prefill", "token": "token", "parse": "model_end", "call": "tool_result"}
    for i, e in enumerate(evs):
        if e["type"] == "paused":
            after = evs[i + 1]
            assert after["type"] == follows[e["stage"]], (e, after)
            if e["stage"] == "token":
                assert after["index"] == e["index"]
            assert e["src"].startswith("agentloop/harnesses/base.py:")


def test_stop_ends_a_paused_wait_at_once_and_nothing_after_it_runs(backend, folder):
    """No time limit: only Stop can end these waits. Stopped at a token's pause, the token is never kept;
    at the call's, the call never runs; at the prefill's, no prefill runs."""
    f = backend.family.key

    def stop_at(stage: str, index: int | None = None):
        def on_pause(harness, event):
            if event["stage"] == stage and event.get("index") == index:
                harness.stop()
            else:
                harness.reader.next()

        return on_pause

    evs = stepped(
        backend, [answer(f, "A long answer.")], folder, stop_at("token", 3), time_limit_s=None
    )
    assert evs[-1]["stop_reason"] == "user_stopped"
    assert [e["index"] for e in only(evs, "token")] == [0, 1, 2]
    assert only(evs, "model_end")[0]["finish"] == "user_stopped"

    evs = stepped(backend, [call(f, "print(1)")], folder, stop_at("call"), time_limit_s=None)
    assert evs[-1]["stop_reason"] == "user_stopped"
    assert only(evs, "decision")[0]["approved"] and not only(evs, "tool_result")

    evs = stepped(backend, [answer(f, "Hi.")], folder, stop_at("prefill"), time_limit_s=None)
    assert evs[-1]["stop_reason"] == "user_stopped" and not only(evs, "prefill")
    end = only(evs, "model_end")[0]
    assert end["finish"] == "user_stopped" and end["n_tokens"] == 0


def test_the_time_limit_ends_a_paused_wait_as_it_ends_a_permission(backend, folder):
    """Nobody presses Next: the run ends by itself when its time is up (the pause counts toward it)."""
    f = backend.family.key
    evs = stepped(
        backend, [answer(f, "Hi.")], folder, lambda harness, event: None, time_limit_s=1.0
    )
    assert [e["stage"] for e in only(evs, "paused")] == ["prefill"]
    assert evs[-1]["stop_reason"] == "time_limit" and evs[-1]["ms"] >= 1000


def test_the_time_held_is_left_out_of_prefill_decode_and_tok_per_s(backend, folder):
    """Each Next comes HELD_S after its pause. Between two events the run's clock (t_ms) runs through the
    holds; the model's timings must fit in what is left once the holds are taken out, which they cannot
    if a hold is counted in them, however fast or slow the machine is."""
    f = backend.family.key

    def hold_then_next(harness, event):
        time.sleep(HELD_S)
        harness.reader.next()

    evs = stepped(backend, [answer(f, "Yes.")], folder, hold_then_next)
    held_ms = HELD_S * 1000
    at = {e["type"]: e for e in evs if e["type"] in ("prefill", "model_end")}
    first_pause = only(evs, "paused")[0]
    end, n = at["model_end"], at["model_end"]["n_tokens"]
    assert (
        n >= 2 and evs[-1]["ms"] >= len(only(evs, "paused")) * held_ms
    )  # the run's own time counts them
    # The prefill came after one hold: its ms fits in the time from that pause to it, less the hold.
    assert at["prefill"]["ms"] <= at["prefill"]["t_ms"] - first_pause["t_ms"] - held_ms + 0.2
    # The decode held before each of its n tokens, and the parse once more before model_end.
    between = end["t_ms"] - at["prefill"]["t_ms"]
    assert end["decode_ms"] <= between - (n + 1) * held_ms + 0.2
    assert end["tok_per_s"] == pytest.approx(n * 1000 / end["decode_ms"], rel=0.05)


def test_held_time_comes_out_of_the_decode_and_out_of_reach_for_a_server_that_runs_ahead():
    done = {
        "finish": "stop_token",
        "n_tokens": 10,
        "decode_ms": 2100.0,
        "tok_per_s": 4.8,
        "raw": "",
    }
    assert without_held(done, 0.0, False) is done
    assert without_held(done, 2.0, False) | {"raw": ""} == {
        **done,
        "decode_ms": 100.0,
        "tok_per_s": 100.0,
    }
    # vLLM generated on while the run was held: what its decode took is not known here.
    ahead = without_held(done, 2.0, True)
    assert ahead["decode_ms"] is None and ahead["tok_per_s"] is None


def test_next_goes_on_only_from_a_pause_and_may_set_the_pace_for_the_rest(backend, folder):
    f = backend.family.key
    reader = Reader(RunSettings(pace="step"), lambda kind, **fields: None)
    assert reader.next() is False  # nothing is paused

    evs = stepped(
        backend,
        [answer(f, "Four words of answer.")],
        folder,
        lambda harness, event: harness.reader.next("full"),
    )
    assert [e["stage"] for e in only(evs, "paused")] == ["prefill"]
    assert evs[-1]["stop_reason"] == "final" and only(evs, "token")


def test_a_slow_run_waits_before_each_token_and_stop_lands_between_two(backend, folder):
    f = backend.family.key
    backend.force(answer(f, "one two three four five six seven eight nine ten"))
    got: list[dict] = []

    def emit(event):  # `harness` is bound below, before the first event
        events.check(event)
        got.append(event)
        if (
            event["type"] == "token" and event["index"] == 2
        ):  # Stop, pressed before token 3's wait ends
            stopper = threading.Thread(target=harness.stop)
            stopper.start()
            stopper.join()

    harness = SimpleHarness(
        backend, [], "Count.", RunSettings(max_new_tokens=200, pace="slow"), emit, files=folder
    )
    harness.run()
    backend.clear_forced()
    # Stop came before token 3 was kept: its wait ends at once, and it never is.
    assert [e["index"] for e in only(got, "token")] == [0, 1, 2]
    end = only(got, "model_end")[0]
    assert end["finish"] == "user_stopped" and got[-1]["stop_reason"] == "user_stopped"
    assert not only(got, "paused")  # slow sends no pauses: it waits, and the reader only watches
    # Three waits of SLOW_S (before tokens 0, 1 and 2) lay between the prefill and model_end: the decode's
    # time fits in what is left of that once they are taken out.
    prefill = only(got, "prefill")[0]
    between = end["t_ms"] - prefill["t_ms"]
    assert end["decode_ms"] <= between - 3 * SLOW_S * 1000 + 0.2


def test_the_endpoint_pi_talks_to_goes_at_the_runs_pace(tiny_qwen3_5):
    """PiHarness hands its Reader's hold to ModelEndpoint: a completion pi asks for pauses as a step does."""
    got: list[dict] = []

    def emit(kind, **fields):
        event = events.make(kind, **fields)
        got.append(event)
        if kind == "paused":
            threading.Thread(target=reader.next).start()

    reader = Reader(RunSettings(pace="step"), emit)
    ep = ModelEndpoint(
        tiny_qwen3_5, RunSettings(temperature=0, max_new_tokens=4), got.append, hold=reader.hold
    )
    ep.start()
    try:
        r = httpx.post(
            ep.base_url + "/chat/completions",
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "Hi"}]},
            headers={"Authorization": f"Bearer {ep.secret}"},
            timeout=120,
        )
    finally:
        ep.close()
    assert r.status_code == 200 and r.text.rstrip().endswith("data: [DONE]")
    stages = [e["stage"] for e in only(got, "paused")]
    assert stages == ["prefill", *["token"] * len(only(got, "token")), "parse"]


def test_with_mtp_a_rounds_guesses_come_before_the_pause_of_its_first_token(own_tiny, folder):
    """Chapter 10's rounds, one Next at a time: each `draft` is sent, then the run waits before the first
    token of that round; each token the model kept is a stage of its own."""
    gemma = own_tiny("gemma4")
    got, _ = run_harness(
        lambda emit: SimpleHarness(
            gemma,
            [],
            "Hi",
            RunSettings(mtp=True, pace="step", use_tools=False, max_new_tokens=12),
            emit,
            files=folder,
        ),
        on_event=lambda harness, event: (
            threading.Thread(target=harness.reader.next).start()
            if event["type"] == "paused"
            else None
        ),
    )
    drafts = only(got, "draft")
    assert drafts and only(got, "model_end")[0]["mtp"]["drafted"] > 0
    for i, e in enumerate(got):
        if e["type"] == "draft":
            after = got[i + 1]
            assert after["type"] == "paused" and after["stage"] == "token"
            assert after["index"] == e["index"]
    paused_tokens = [e["index"] for e in only(got, "paused") if e["stage"] == "token"]
    assert paused_tokens == [e["index"] for e in only(got, "token")]
