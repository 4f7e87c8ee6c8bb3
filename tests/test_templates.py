"""The tiny checkpoints' chat templates render what Qwen3.5's and Gemma 4's own templates render.

tests/fixtures/official_renderings.json holds conversations of every shape the book and the loop use, each with
the exact string the official template renders for it, recorded from the official templates (each entry names
its source). Here each is rendered through the tiny checkpoint's own template, the way the harness renders, and
must be equal byte for byte. Then: the parsers and the backend's channels read what the real models write after
these prompts, and the harness's prompts keep (or, where the real template does not, lose) the last prompt and
the model's output as their prefix from one step to the next.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SimpleHarness
from agentloop.model_families import FAMILIES
from agentloop.model_families.base import Sampling
from agentloop.tiny_models import TEMPLATES
from tests.conftest import TINY

FIXTURES = json.loads(
    (Path(__file__).parent / "fixtures" / "official_renderings.json").read_text()
)["fixtures"]
SCHEMAS = {
    "run_python": {
        "type": "object",
        "properties": {"code": {"type": "string"}},
        "required": ["code"],
    }
}
EMPTY_THOUGHT = "<|channel>thought\n<channel|>"


def test_the_fixtures_cover_every_shape():
    for family in TINY:
        shapes = {f["shape"] for f in FIXTURES if f["family"] == family}
        assert len(shapes) >= 20, family
    assert all(f["source"] and f["rendered"] for f in FIXTURES)


@pytest.mark.parametrize("family", sorted(TINY))
def test_the_checkpoints_carry_the_templates(family):
    template = (TEMPLATES / f"{family}.jinja").read_text()
    assert (TINY[family] / "chat_template.jinja").read_text() == template


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f["id"] for f in FIXTURES])
def test_tiny_template_renders_what_the_official_one_renders(fixture, tiny):
    backend = tiny(fixture["family"])
    rendered = backend.render(
        fixture["messages"],
        fixture["tools"],
        fixture["enable_thinking"],
        generation_prompt=fixture["add_generation_prompt"],
    )
    assert rendered == fixture["rendered"]


def prompt_of(family: str, shape: str) -> str:
    return next(f["rendered"] for f in FIXTURES if f["family"] == family and f["shape"] == shape)


# What the real models write after a prompt that ends as these do (the families' docstrings show the formats).
REAL_OUTPUTS = {
    (
        "qwen3_5",
        False,
    ): "<tool_call>\n<function=run_python>\n<parameter=code>\nprint(1)\n</parameter>\n</function>\n"
    "</tool_call><|im_end|>",
    (
        "qwen3_5",
        True,
    ): "Count with Python.\n</think>\n\n<tool_call>\n<function=run_python>\n<parameter=code>\n"
    "print(1)\n</parameter>\n</function>\n</tool_call><|im_end|>",
    # After the empty thought channel the model writes no thought: it starts with its call or its answer.
    (
        "gemma4",
        False,
    ): '<|tool_call>call:run_python{code:<|"|>print(1)<|"|>}<tool_call|><|tool_response>',
    ("gemma4", True): "<|channel>thought\nCount with Python.<channel|><|tool_call>call:run_python"
    '{code:<|"|>print(1)<|"|>}<tool_call|><|tool_response>',
}


@pytest.mark.parametrize("family,thinking", sorted(REAL_OUTPUTS))
def test_parsers_and_channels_read_what_the_real_models_write(family, thinking, own_tiny):
    backend = own_tiny(family)
    prompt = prompt_of(family, "tools, system, thinking on" if thinking else "tools and system")
    # The prompt's end says whether the model starts out thinking: only an open think block or channel does.
    thinking_open = prompt.endswith(FAMILIES[family].thought_prefix)
    assert thinking_open == (thinking and family == "qwen3_5")
    if family == "gemma4":
        assert prompt.endswith("<|turn>model\n" if thinking else "<|turn>model\n" + EMPTY_THOUGHT)
    else:
        assert prompt.endswith("<think>\n" if thinking else "<think>\n\n</think>\n\n")
    raw = REAL_OUTPUTS[family, thinking]
    parsed = FAMILIES[family].parse(raw, SCHEMAS, thinking_open=thinking_open)
    assert parsed.error is None
    assert (parsed.thinking, parsed.content) == ("Count with Python." if thinking else "", "")
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("run_python", {"code": "print(1)"})
    ]

    # The backend, made to write the same output after the real prompt, puts each token in the same channel.
    backend.force(raw)
    tokens = [
        e
        for e in backend.generate(
            backend.encode(prompt), Sampling(0, max_new_tokens=200), lambda: False
        )
        if e["type"] == "token"
    ]
    assert "".join(e["text"] for e in tokens) == raw
    by_channel = lambda name: "".join(e["text"] for e in tokens if e["channel"] == name)  # noqa: E731
    assert ("Count with Python." in by_channel("thought")) == thinking
    assert "print(1)" in by_channel("tool_call") and "Count" not in by_channel("content")


def run_steps(
    backend, outputs: list[str], thinking: bool, folder, history=None, question="How many letters?"
):
    """Run one question with the model made to write `outputs`; each step's prompt and raw output, and the
    conversation after it."""
    for text in outputs:
        backend.force(text)
    events: list[dict] = []
    harness = SimpleHarness(
        backend,
        history or [],
        question,
        RunSettings(thinking=thinking, auto_approve=True, tools=("run_python",)),
        events.append,
        files=folder,
    )
    harness.run()
    backend.clear_forced()  # what the run did not reach is not the next run's
    prompts = [e["prompt"] for e in events if e["type"] == "context"]
    raws = [e["raw"] for e in events if e["type"] == "model_end"]
    return list(zip(prompts, raws, strict=True)), harness.messages


def stable(steps) -> list[bool]:
    """For each step after the first: does its prompt start with the last prompt and what the model wrote?"""
    return [now.startswith(before + raw) for (before, raw), (now, _) in zip(steps, steps[1:])]


def outputs_for(family: str, thinking_each_step: list[bool]) -> list[str]:
    """The model's output at each step: a call, another call, the answer; a thought before those that think
    (Qwen's prompt already opened the think block, Gemma's model opens its thought channel itself)."""
    write = FAMILIES[family].write_call
    texts = [
        write("run_python", {"code": 'print(len("strawberry"))'}),
        write("run_python", {"code": 'print(sum(1 for _ in "strawberry"))'}),
        "It has 10 letters." + ("<|im_end|>" if family == "qwen3_5" else "<turn|>"),
    ]
    thought = (
        "Count.\n</think>\n\n" if family == "qwen3_5" else "<|channel>thought\nCount.<channel|>"
    )
    return [
        (thought if thinks else "") + text
        for text, thinks in zip(texts, thinking_each_step, strict=True)
    ]


# (family, thinking, which steps the model thinks in) → stable at steps 2 and 3, stable at the next question.
PREFIX_CASES = {
    # Qwen keeps the model's messages after the last question as they were written: stable within a question.
    ("qwen3_5", False, (False, False, False)): ([True, True], False),
    ("qwen3_5", True, (True, True, True)): ([True, True], False),
    # Gemma's history leaves out the empty thought channel its thinking-off prompt ends with: never stable.
    ("gemma4", False, (False, False, False)): ([False, False], False),
    # With thinking on, a step without a thought keeps the prefix; a thought is dropped from the history, and
    # the answer after a tool result opens a new model turn in the history.
    ("gemma4", True, (False, True, False)): ([True, False], False),
}


@pytest.mark.parametrize("case", sorted(PREFIX_CASES), ids=lambda c: f"{c[0]}-thinking-{c[1]}")
def test_step_to_step_prefix_is_stable_where_the_real_templates_is(case, folder, own_tiny):
    """The next question renders the earlier turns before the last question: Qwen writes them without their
    think blocks (even the empty ones of thinking off), Gemma without its open turn, so the prefix breaks."""
    family, thinking, thoughts = case
    backend = own_tiny(family)
    steps, messages = run_steps(backend, outputs_for(family, list(thoughts)), thinking, folder)
    assert len(steps) == 3 and messages[-1]["content"] == "It has 10 letters."
    follow, _ = run_steps(
        backend,
        [outputs_for(family, [False, False, False])[2]],
        thinking,
        folder,
        history=messages,
        question="And how many r?",
    )
    report = {
        "within the question": stable(steps),
        "at the next question": stable([steps[-1], follow[0]])[0],
    }
    expected_within, expected_next = PREFIX_CASES[case]
    assert report == {
        "within the question": expected_within,
        "at the next question": expected_next,
    }, report


CHAPTERS = Path(__file__).parent.parent / "docs" / "chapters"
RENDERING = re.compile(
    r"^(?P<indent>[ \t]*)<!-- rendering: (?P<id>\S+) -->\n(?P=indent)```text\n(?P<body>.*?)\n"
    r"(?P=indent)```$",
    re.M | re.S,
)


def test_the_book_shows_the_renderings_as_recorded():
    """A chapter's `<!-- rendering: ID -->` block is the fixture's string (trailing newlines aside)."""
    by_id = {f["id"]: f["rendered"] for f in FIXTURES}
    shown = [
        (path.name, m)
        for path in sorted(CHAPTERS.glob("*.md"))
        for m in RENDERING.finditer(path.read_text())
    ]
    assert len(shown) >= 5
    for name, m in shown:
        indent = m.group("indent")
        body = "\n".join(line.removeprefix(indent) for line in m.group("body").split("\n"))
        assert body == by_id[m.group("id")].rstrip("\n"), f"{name}: {m.group('id')}"
