"""step.py's prompt accounting: which role's messages take how many of the prompt's tokens (`role_tokens`), in
the conversations where a template rewrites earlier turns (a follow-up) or a placeholder expands (a photo).

Each case is checked on both families' tiny checkpoints, against counts of the parts' own text.
"""

from __future__ import annotations

from pathlib import Path

from agentloop import media
from agentloop.harnesses.step import role_tokens

PHOTO = (
    Path(__file__).resolve().parent.parent / "docs" / "chapters" / "runs" / "media" / "photo.jpg"
)
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "run_python", "arguments": {"code": "print(17 * 23)"}},
}
FOLLOW_UP = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is 17 * 23?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "name": "run_python", "content": "391"},
    {"role": "assistant", "content": "It is 391."},
    {"role": "user", "content": "And times 2?"},
]


def accounted(backend, messages, thinking=False):
    prompt = backend.render(messages, None, thinking)
    encoded = backend.encode(prompt, media.parts(messages))
    counts = role_tokens(backend, messages, None, thinking, prompt, encoded)
    assert sum(counts.values()) == encoded.n_tokens
    return counts, encoded


def tokens(backend, text: str) -> int:
    return backend.encode(text).n_tokens


def test_a_follow_ups_earlier_turns_keep_their_tokens(backend):
    # Qwen3.5's template drops the thinking block from turns before the last question, so the conversation
    # rendered up to the call is no longer the follow-up prompt's beginning; the tool's result still counts.
    for thinking in (False, True):
        counts, _ = accounted(backend, FOLLOW_UP, thinking)
        assert counts["tool"] >= tokens(backend, "391"), (thinking, counts)
        assert counts["user"] >= tokens(backend, "What is 17 * 23?And times 2?"), counts
        assert counts["assistant"] >= tokens(backend, "print(17 * 23)It is 391."), counts
        # The tool's share is its turn, not the answer after it.
        assert counts["tool"] < tokens(backend, "391") + 20, counts
    # Thinking changes the opened reply and the system turn (Gemma 4 marks it there), never the user's or
    # the tool's turns.
    off, _ = accounted(backend, FOLLOW_UP, False)
    on, _ = accounted(backend, FOLLOW_UP, True)
    assert (off["user"], off["tool"]) == (on["user"], on["tool"])


def test_a_photos_tokens_are_the_users(backend):
    messages = [
        {"role": "system", "content": "S"},
        {
            "role": "user",
            "content": [
                {"type": "image", "path": str(PHOTO)},
                {"type": "text", "text": "What is it?"},
            ],
        },
    ]
    counts, encoded = accounted(backend, messages)
    assert counts["user"] >= encoded.media_tokens["image"] > 50, counts
    assert counts["assistant"] < 12, counts  # the opened reply only
