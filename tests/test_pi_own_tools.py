"""pi's own loop: its system prompt and its tools (read, bash, edit, write, ls, find, grep), each run in
the book's sandbox over the conversation's folder, with the reader asked before every call. Real pi
from `npm ci`, the real endpoint, real bubblewrap, the embedded default model. The sandbox's tests force
exact calls (SimpleBackend.force, the testing aid the recordings use), which no model writes on cue: what
they test is what pi and the sandbox do with them. The last test is the model's own: it was trained on pi's
prompt and bash too."""

from __future__ import annotations

import json
import random
import socket
import threading
from pathlib import Path

import pytest

from agentloop import media
from agentloop.harnesses.pi.command import NODE, PI_CLI
from agentloop.harnesses.pi.harness import PiHarness
from agentloop.harnesses.settings import RunSettings
from agentloop.model_families import FAMILIES
from tests.conftest import AGENTS, load, run_harness

QWEN = FAMILIES["qwen3_5"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model():
    """A backend of this module's own on the default model: the tests force what it writes."""
    assert NODE.exists() and PI_CLI.exists(), "pi is not installed: run `npm ci`"
    return load(AGENTS["qwen3_5"])


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def run_forced(model, folder, calls, decide=lambda e: True, **settings):
    """One question in pi's own loop, its model made to write `calls` (name, args) in one reply,
    then "Done."; each permission answered by decide(event)."""
    model.force(QWEN.write_output(None, "", calls))
    model.force(QWEN.write_output(None, "Done.", []))
    try:
        return run_harness(
            lambda emit: PiHarness(
                model,
                [],
                "Use the tools.",
                RunSettings(temperature=0, max_new_tokens=400, max_steps=3, **settings),
                emit,
                folder,
            ),
            decide,
        )
    finally:
        model.clear_forced()


def only(evs, kind):
    return [e for e in evs if e["type"] == kind]


def test_pi_gives_the_model_its_own_prompt_and_tools_naming_data_as_its_folder(model, folder, home):
    evs, harness = run_forced(model, folder, [])
    request = only(evs, "request")[0]["payload"]
    system = request["messages"][0]["content"]
    # pi's own system prompt, as pi wrote it, with the working folder the tools work in.
    assert system.startswith("You are a coding assistant running inside pi")
    assert "<cwd>\n/data\n</cwd>" in system and "- bash: Execute bash commands" in system
    assert [t["function"]["name"] for t in request["tools"]] == ["read", "bash", "edit", "write"]
    assert evs[0]["tools"] == ["read", "bash", "edit", "write"] and harness.own_tools
    # What the toys are trained on through pi (issue 42) is this prompt and these tools, as pi sends them.
    from agentloop.training.pi_format import captured, system_prompt

    assert system == system_prompt(random.Random(0)) and request["tools"] == captured()["tools"]


def test_pis_bash_runs_in_the_sandbox(model, folder, home, tmp_path):
    # A listener on the host's loopback: the sandbox has a network of its own, so it is not reached.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    reached = []

    def accept():
        try:
            reached.append(listener.accept())
        except OSError:
            pass

    waiter = threading.Thread(target=accept)
    waiter.start()
    port = listener.getsockname()[1]
    host_marker = tmp_path / "marker-from-the-sandbox"
    command = (
        f"echo inside > /data/inside.txt; echo outside > {host_marker}; "
        "find / -maxdepth 1 | sort; "
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' "
        "|| echo CONNECT-FAILED"
    )
    evs, _ = run_forced(model, folder, [("bash", {"command": command})])
    waiter.join()
    listener.close()
    result = only(evs, "tool_result")[0]
    assert only(evs, "tool_call")[0]["name"] == "bash"
    assert (folder / "inside.txt").read_text() == "inside\n"  # /data is the conversation's folder
    assert not host_marker.exists()  # the host's folders are not there to write
    top = {
        line for line in result["output"].splitlines() if line.startswith("/") and " " not in line
    }
    assert "/data" in top and "/usr" in top
    assert top <= {
        "/",
        "/data",
        "/tmp",
        "/dev",
        "/proc",
        "/usr",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
    }, top  # the sandbox's root, nothing of the host's
    assert "CONNECT-FAILED" in result["output"] and not reached


def test_the_reader_is_asked_before_each_of_pis_tools(model, folder, home):
    # In two runs: all seven of pi's tools in one request would not fit the tiny model's window.
    notes = folder / "notes.txt"
    notes.write_text("apples 3\npears 5\n")
    notes.chmod(0o666)  # as root the sandbox's code is nobody: a file it may change, as its own are
    files = [
        ("write", {"path": "new.txt", "content": "written by pi\n"}),
        ("read", {"path": "notes.txt"}),
        ("edit", {"path": "notes.txt", "edits": [{"oldText": "pears 5", "newText": "pears 6"}]}),
        ("ls", {"path": "."}),
    ]
    searches = [
        ("find", {"pattern": "*.txt"}),
        ("grep", {"pattern": "apples"}),
        ("bash", {"command": "echo should-not-run > /data/denied.txt"}),
    ]
    results = {}
    for calls in (files, searches):
        denied = f"call_1_{len(calls) - 1}" if calls is searches else None  # bash, the last

        def decide(event, denied=denied):  # the endpoint numbers step 1's calls call_1_0, ...
            return event["call_id"] != denied

        names = tuple(n for n, _ in calls)
        evs, _ = run_forced(model, folder, calls, decide=decide, tools=names)
        assert sorted(c["name"] for c in only(evs, "tool_call")) == sorted(names)
        assert len(only(evs, "permission")) == len(calls)  # one question per call, none skipped
        results.update({r["name"]: r for r in only(evs, "tool_result")})
    assert (folder / "new.txt").read_text() == "written by pi\n"
    assert "apples 3" in results["read"]["output"]
    assert (folder / "notes.txt").read_text() == "apples 3\npears 6\n"
    assert "notes.txt" in results["ls"]["output"] and "new.txt" in results["find"]["output"]
    assert "apples 3" in results["grep"]["output"]
    assert results["bash"]["is_error"] and "denied" in results["bash"]["output"]
    assert not (folder / "denied.txt").exists()


def test_an_attached_image_reaches_a_model_that_reads_images(tiny_gemma4, folder, home, tmp_path):
    photo = ROOT / "docs" / "chapters" / "runs" / "media" / "photo.jpg"
    own = tmp_path / "own"  # the host's own copy of the medium, as the server keeps one
    own.mkdir()
    attached = media.save(photo.read_bytes(), "photo.jpg", folder, own, tiny_gemma4.modalities)
    assert attached.kind == "image" and attached.path
    evs, _ = run_harness(
        lambda emit: PiHarness(
            tiny_gemma4,
            [],
            "What is in the picture?",
            RunSettings(temperature=0, max_new_tokens=4, max_steps=1, use_tools=False),
            emit,
            folder,
            [attached],
        )
    )
    # Saved in /data and named in the question pi was given ...
    assert (folder / "photo.jpg").read_bytes() == photo.read_bytes()
    user = only(evs, "request")[0]["payload"]["messages"][-1]
    text = "".join(p.get("text", "") for p in user["content"] if p["type"] == "text")
    assert "Attached: /data/photo.jpg" in text
    # ... and sent to the model as an image: pi's data URL, decoded by the endpoint, encoded by the
    # backend into the image's tokens.
    assert [p["type"] for p in user["content"]].count("image_url") == 1
    context = only(evs, "context")[0]
    assert context["media_tokens"] and not only(evs, "error")


def test_a_follow_up_in_pis_own_loop_is_the_conversation_training_writes(model, folder, home):
    """pi's session carries the first question's bash call, its output and the answer into the follow-up's
    request: the shape pi_format.pi_request writes a conversation in, which the toys are trained on (issue 42)."""
    from agentloop.training.conversations import Task
    from agentloop.training.pi_format import pi_request

    first = Task("arithmetic", "What is 17 * 23?", "print(17 * 23)", "391", "It is 391.")
    second = Task("follow_up", "and times 2?", "print(391 * 2)", "782", "It is 782.")
    history = []
    for t in (first, second):
        command = f"python3 -c '{t.code}'"
        model.force(QWEN.write_output(None, "", [("bash", {"command": command})]))
        model.force(QWEN.write_output(None, t.answer, []))
        try:
            evs, harness = run_harness(
                lambda emit, t=t, history=history: PiHarness(
                    model,
                    history,
                    t.question,
                    RunSettings(temperature=0, max_new_tokens=200, max_steps=3),
                    emit,
                    folder,
                ),  # fmt: skip
                lambda e: True,
            )
        finally:
            model.clear_forced()
        assert only(evs, "tool_result")[0]["output"] == t.output + "\n"
        history = harness.messages
    sent = only(evs, "request")[0]["payload"]  # the follow-up's first request, from pi's session
    trained = pi_request([first, second], sent["messages"][0]["content"])

    def shape(messages):  # what the model reads of each message (call ids are pi's to number)
        return [
            (
                m["role"],
                m.get("content"),
                [
                    (c["function"]["name"], json.loads(c["function"]["arguments"]))
                    for c in m.get("tool_calls") or []
                ],
            )
            for m in messages
        ]

    assert shape(sent["messages"]) == shape(
        trained["messages"][:-3]
    )  # up to the follow-up's question
    assert sent["tools"] == trained["tools"]
