"""The training data (training/conversations.py, data.segments): every task's code prints what the task says,
the conversations are what SimpleHarness would hold, and a phase without repeats sees exactly the data it saw
before repeats existed."""

from __future__ import annotations

import contextlib
import io
import random

import pytest

from agentloop.harnesses.simple_harness import REPEATED_CALL
from agentloop.training.conversations import CHAT_KINDS, MAKERS, TOOL_KINDS, conversation, task
from agentloop.training.data import segments


def printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})  # noqa: S102 - code the generator wrote
    return out.getvalue().strip()


@pytest.mark.parametrize("kind", [k for k in TOOL_KINDS if k != "file_lines"])
def test_the_code_prints_the_tasks_output_and_the_answer_states_it(kind):
    rng = random.Random(7)
    for _ in range(40):
        t = task(rng, kind)
        assert printed(t.code) == t.output, t
        assert t.output in t.answer


def test_file_lines_counts_the_file_it_comes_with():
    t = task(random.Random(3), "file_lines")
    ((name, text),) = t.files.items()
    assert name in t.code and str(len(text.splitlines())) == t.output


def test_kinds_cover_the_makers():
    assert set(TOOL_KINDS) | set(CHAT_KINDS) == set(MAKERS)


def test_no_repeats_draws_nothing_more():
    plain, with_zero = random.Random(11), random.Random(11)
    assert [task(plain) for _ in range(50)] == [
        task(with_zero, repeat_share=0.0) for _ in range(50)
    ]


def test_a_repeat_conversation_is_the_run_the_loop_would_hold():
    t = task(random.Random(5), "arithmetic", repeat_share=1.0)
    assert t.repeat and ("twice" in t.question or "two times" in t.question)
    messages = conversation(t, thinking=False)
    calls = [m["tool_calls"][0]["function"] for m in messages if m.get("tool_calls")]
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert len(calls) == 2 and calls[0] == calls[1]
    assert tools == [t.output, REPEATED_CALL] and messages[-1]["content"] == t.answer


# Gemma 4's faithful template (issue 19) does not keep a step's prompt as the start of the next one (the empty
# thought channel, a new model turn after a result), so segments() cannot yet cut its conversations: to be
# mended with the retraining on the faithful format (issue 19 part 3). Strict: it fails once it passes.
GEMMA_SEGMENTS = pytest.mark.xfail(
    strict=True,
    reason="segments() needs each prompt to start the next; Gemma 4's real template breaks that",
)


@pytest.mark.parametrize("family", ["qwen3_5", pytest.param("gemma4", marks=GEMMA_SEGMENTS)])
def test_segments_alternate_prompt_and_model_and_end_at_stop_tokens(family, tiny):
    b = tiny(family)
    t = task(random.Random(5), "sorting", repeat_share=1.0)
    parts = segments(b, t, thinking=False)
    assert [own for _, own in parts] == [
        False,
        True,
    ] * 3  # three steps: the call, the repeat, the answer
    for text, own in parts:
        if own:
            assert any(text.endswith(p) for p in b.family.stop_pieces), text
