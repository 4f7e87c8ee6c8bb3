"""SimpleHarness.run(): the loop's stages, in order, on both families, with forced continuations of the real models.

A random tiny model rarely writes a tool call, so these tests tell the backend what to write (backend.force);
the model still scores every token, and everything after generation — parsing, validation, permission, the
sandbox, the next step's prompt — runs for real.
"""

from __future__ import annotations

import threading
import time

import pytest

from agentloop import events
from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SimpleHarness
from agentloop.model_families import FAMILIES
from tests.conftest import APPROVED_RUN, run_harness


def call(family: str, code: str, tool: str = "run_python", key: str = "code") -> str:
    """A tool call as the family's model writes it, stop token included."""
    return FAMILIES[family].write_call(tool, {key: code})


def answer(family: str, text: str) -> str:
    return text + ("<|im_end|>" if family == "qwen3_5" else "<turn|>")


def run(backend, outputs: list[str], tmp_path, decide=None, **settings) -> list[dict]:
    """Run one question with the model made to write `outputs`, one per step; `decide(event)` answers permissions."""
    for text in outputs:
        backend.force(text)
    got, _ = run_harness(
        lambda emit: SimpleHarness(
            backend,
            [],
            "What is 2**64?",
            RunSettings(**{"max_new_tokens": 200, **settings}),
            emit,
            files=tmp_path,
        ),
        decide,
    )
    backend.clear_forced()  # what the run did not reach is not the next run's
    return got


def kinds(evs: list[dict]) -> list[str]:
    return [e["type"] for e in evs if e["type"] not in ("token",)]


def only(evs: list[dict], kind: str) -> list[dict]:
    return [e for e in evs if e["type"] == kind]


def test_run_start_says_what_the_model_is(backend, tmp_path):
    """Issue 47: a run's Model tab shows the model that ran it, replayed anywhere, so run_start carries its
    facts (model_backends/facts.py, which GET /api/status reads too): its shape from config.json, what ran it,
    the media it reads and refuses, and its recommended sampling."""
    start = only(run(backend, [answer(backend.family.key, "Hi.")], tmp_path), "run_start")[0]
    text = backend.config.get("text_config", backend.config)
    specs = start["specs"]
    assert (
        specs["layers"] == text["num_hidden_layers"] and specs["vocabulary"] == text["vocab_size"]
    )
    assert specs["context_length"] == backend.context_length and specs["parameters"] > 0
    assert (start["backend"], start["device"], start["dtype"], start["precision"]) == (
        "transformers",
        "cpu",
        "float32",
        "tiny",
    )
    assert start["media"] == {"reads": list(backend.modalities), "refused": backend.media_refused}
    s = backend.sampling_defaults
    assert start["defaults"] == {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k}


def test_approved_call_runs_and_the_answer_uses_its_result(backend, tmp_path):
    f = backend.family.key
    evs = run(
        backend,
        [call(f, "print(2**64)"), answer(f, "It is 18446744073709551616.")],
        tmp_path,
        decide=lambda e: True,
    )
    assert kinds(evs) == APPROVED_RUN
    result = only(evs, "tool_result")[0]
    assert result["output"].strip() == "18446744073709551616" and not result["is_error"]
    assert (
        only(evs, "decision")[0]["approved"] is True and only(evs, "decision")[0]["by"] == "reader"
    )
    end = evs[-1]
    assert (
        end["stop_reason"] == "final"
        and end["final"] == "It is 18446744073709551616."
        and end["steps"] == 2
    )
    # Step 2's prompt is step 1's plus what step 1 added: the call as the template writes it, and the result.
    first, second = only(evs, "context")
    assert first["added_from"] == 0 and 0 < second["added_from"] <= len(first["prompt"])
    assert "18446744073709551616" in second["prompt"][second["added_from"] :]
    assert second["roles"] == {"system": 1, "user": 1, "assistant": 1, "tool": 1}
    # Per role, the tokens its messages take: they add up to the prompt's, the tool's part holds
    # its result, and step 2 adds to the assistant's and the tool's share only.
    assert only(evs, "run_start")[0]["question"] == "What is 2**64?"  # a replay draws it
    for ctx in (first, second):
        assert sum(ctx["role_tokens"].values()) == ctx["n_tokens"]
    assert set(first["role_tokens"]) == {"system", "user", "assistant"}
    assert set(second["role_tokens"]) == {"system", "user", "assistant", "tool"}
    assert second["role_tokens"]["system"] == first["role_tokens"]["system"] > 20
    assert second["role_tokens"]["user"] == first["role_tokens"]["user"]
    assert second["role_tokens"]["tool"] >= backend.encode("18446744073709551616").n_tokens
    assert second["role_tokens"]["assistant"] > first["role_tokens"]["assistant"]
    tokens = only(evs, "token")
    assert all(t["step"] in (1, 2) for t in tokens) and tokens[0]["index"] == 0


def test_denied_call_is_told_to_the_model(backend, tmp_path):
    f = backend.family.key
    evs = run(
        backend, [call(f, "print(1)"), answer(f, "Alright.")], tmp_path, decide=lambda e: False
    )
    result = only(evs, "tool_result")[0]
    assert result["is_error"] and "denied" in result["output"]
    assert "denied" in only(evs, "context")[1]["prompt"]
    assert not (tmp_path / "anything").exists()


def test_invalid_arguments_go_back_without_permission(backend, tmp_path):
    f = backend.family.key
    asked = []
    evs = run(
        backend,
        [call(f, "x", key="source"), answer(f, "Sorry.")],
        tmp_path,
        decide=lambda e: asked.append(e) or True,
    )
    assert not asked and not only(evs, "permission")
    assert "error" in only(evs, "tool_call")[0]
    result = only(evs, "tool_result")[0]
    assert result["is_error"] and "code" in result["output"]


def test_malformed_call_is_a_counted_format_error(backend, tmp_path):
    f = backend.family.key
    broken = call(f, "print(1)").replace("</tool_call>", "").replace("<tool_call|>", "")
    evs = run(backend, [broken, broken, broken], tmp_path, max_format_errors=2)
    errors = [e for e in only(evs, "tool_call") if e.get("error")]
    assert len(errors) == 2 and errors[0]["name"] is None
    assert "could not be read" in only(evs, "context")[1]["prompt"]
    assert evs[-1]["stop_reason"] == "format_errors" and evs[-1]["steps"] == 2


def test_repeated_call_is_caught(backend, tmp_path):
    f = backend.family.key
    evs = run(
        backend,
        [call(f, "print(7)"), call(f, "print(7)"), answer(f, "7")],
        tmp_path,
        auto_approve=True,
    )
    first, second = only(evs, "tool_result")
    assert first["output"].strip() == "7" and not first["is_error"]
    assert second["is_error"] and "already made this exact call" in second["output"]
    assert len(only(evs, "permission")) == 1 and only(evs, "decision")[0]["by"] == "auto"


def test_max_steps_ends_the_run(backend, tmp_path):
    f = backend.family.key
    evs = run(
        backend,
        [call(f, "print(1)"), call(f, "print(2)")],
        tmp_path,
        auto_approve=True,
        max_steps=2,
    )
    assert (
        evs[-1]["stop_reason"] == "max_steps" and evs[-1]["steps"] == 2 and evs[-1]["final"] == ""
    )


def test_stop_from_another_thread_ends_generation_within_one_token(backend, tmp_path):
    backend.force("one two three four five six seven eight nine ten " * 8)
    got: list[dict] = []
    stopped_at = []

    def emit(event):  # `harness` is bound below, before the first event
        got.append(event)
        if event["type"] == "token" and event["index"] == 4:
            threading.Thread(target=harness.stop).start()
            time.sleep(0.2)  # the stop lands before the next token is asked for
            stopped_at.append(event["index"])

    harness = SimpleHarness(
        backend, [], "Count.", RunSettings(max_new_tokens=300), emit, files=tmp_path
    )
    harness.run()
    backend.clear_forced()
    tokens = only(got, "token")
    assert len(tokens) <= stopped_at[0] + 2  # the token being made when stop() came, at most
    end = only(got, "model_end")[0]
    assert end["finish"] == "user_stopped"
    assert got[-1]["type"] == "run_end" and got[-1]["stop_reason"] == "user_stopped"


def test_stop_while_waiting_for_permission(backend, tmp_path):
    f = backend.family.key
    backend.force(call(f, "print(1)"))
    got: list[dict] = []
    harness = SimpleHarness(
        backend, [], "Go.", RunSettings(max_new_tokens=200), got.append, files=tmp_path
    )
    worker = threading.Thread(target=harness.run)
    worker.start()
    deadline = time.time() + 60
    while not only(got, "permission") and time.time() < deadline:
        time.sleep(0.02)
    harness.stop()
    worker.join(10)
    backend.clear_forced()
    assert not worker.is_alive()
    assert got[-1]["stop_reason"] == "user_stopped" and not only(got, "tool_result")


def test_time_limit_ends_a_wait_for_permission(backend, tmp_path):
    backend.force(call(backend.family.key, "print(1)"))
    got: list[dict] = []
    # Nobody decides: the run must end by itself when its time is up, with nothing run.
    harness = SimpleHarness(
        backend,
        [],
        "Go.",
        RunSettings(max_new_tokens=200, time_limit_s=3.0),
        got.append,
        files=tmp_path,
    )
    worker = threading.Thread(target=harness.run)
    worker.start()
    worker.join(60)
    backend.clear_forced()
    assert not worker.is_alive()
    assert only(got, "permission") and not only(got, "decision") and not only(got, "tool_result")
    assert got[-1]["stop_reason"] == "time_limit"


def test_time_limit_ends_the_run(backend, tmp_path):
    backend.force("word " * 150)
    evs = run(backend, [], tmp_path, time_limit_s=0.0)
    assert evs[-1]["stop_reason"] == "time_limit"


def test_no_tools_means_no_tools_in_the_prompt(backend, tmp_path):
    f = backend.family.key
    evs = run(backend, [answer(f, "Hello.")], tmp_path, use_tools=False)
    assert only(evs, "run_start")[0]["tools"] == []
    assert "run_python" not in only(evs, "context")[0]["prompt"]
    assert evs[-1]["final"] == "Hello."


def test_thinking_is_kept_under_the_familys_key(backend, tmp_path):
    f = backend.family.key
    thought = (
        "Let me compute.\n</think>\n\n"
        if f == "qwen3_5"
        else "<|channel>thought\nLet me compute.<channel|>"
    )
    evs = run(
        backend,
        [thought + call(f, "print(3)"), answer(f, "3")],
        tmp_path,
        auto_approve=True,
        thinking=True,
    )
    # Qwen writes the thought back after the question; Gemma's template never writes a thought back.
    assert ("Let me compute." in only(evs, "context")[1]["prompt"]) == (f == "qwen3_5")
    thought_tokens = [t for t in only(evs, "token") if t["channel"] == "thought"]
    assert "Let me compute." in "".join(t["text"] for t in thought_tokens)


def test_a_denied_call_repeated_is_answered_as_denied(backend, tmp_path):
    # The model asks again for a call the reader denied: it is told the call was denied and never ran, not that
    # "its result is above" (there is none), and the reader is not asked twice.
    f = backend.family.key
    evs = run(
        backend,
        [call(f, "print(7)"), call(f, "print(7)"), answer(f, "I cannot.")],
        tmp_path,
        decide=lambda e: False,
    )
    first, second = only(evs, "tool_result")
    assert first["is_error"] and "denied" in first["output"]
    assert (
        second["is_error"]
        and "already denied" in second["output"]
        and "above" not in second["output"]
    )
    assert len(only(evs, "permission")) == 1


def test_every_event_carries_its_time_since_the_start_and_the_line_that_sent_it(backend, tmp_path):
    f = backend.family.key
    evs = run(backend, [call(f, "print(7)"), answer(f, "7")], tmp_path, auto_approve=True)
    times = [e["t_ms"] for e in evs]
    assert times == sorted(times) and times[0] < times[-1]
    assert evs[-1]["ms"] >= times[-1] - 1
    # The loop sends its own events; the step's (context, prefill, token) and the reader's
    # (permission, decision) come from the functions they share with pi's harness.
    senders = {
        "context": "step.py",
        "prefill": "step.py",
        "token": "step.py",
        "permission": "base.py",
        "decision": "base.py",
    }
    for e in evs:
        path, line = e["src"].rsplit(":", 1)
        assert path == f"agentloop/harnesses/{senders.get(e['type'], 'simple_harness.py')}", e
        source = (events.ROOT / path).read_text().splitlines()
        assert "emit(" in source[int(line) - 1], (e["type"], source[int(line) - 1])


def test_one_registry_of_harnesses_and_one_of_backends_every_caller_reads():
    """The CLI's choices, the server's settings and load schemas and its status list are the
    registries' names (a new harness or backend is one entry, not six places)."""
    from agentloop.cli import parser
    from agentloop.harnesses import HARNESSES, harness_class
    from agentloop.model_backends import BACKENDS
    from demo_server.schemas import LoadRequest, RunSettingsIn

    run = parser()._subparsers._group_actions[0].choices["run"]
    choices = {a.dest: a.choices for a in run._actions}
    assert list(choices["harness"]) == list(HARNESSES) and list(choices["backend"]) == list(
        BACKENDS
    )
    for name in HARNESSES:
        assert RunSettingsIn(harness=name).harness == name
        cls = harness_class(name)
        assert isinstance(cls.takes_attachments, bool) and callable(cls.decide)
    for kind in BACKENDS:
        assert LoadRequest(model="m", backend=kind).backend == kind
    with pytest.raises(ValueError):
        RunSettingsIn(harness="emacs")
    with pytest.raises(ValueError):
        LoadRequest(model="m", backend="llama.cpp")
