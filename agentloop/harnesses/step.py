"""One step of the loop, the model's part of it: the conversation rendered into one string, encoded, shown
(`context`), generated one token at a time (`prefill`, `token`) at the reader's pace (pace.py), and read back
(parsed by the family). What the step does with that (run a tool, answer, try again) is the harness's.

Both loops that run this page's model take their steps here: SimpleHarness, and ModelEndpoint, which answers pi's
requests with the same events. Here too: the prompt accounting the `context` event carries (what the step added,
the tokens by role). Left out: `model_end`, sent by each harness its own way, and all that follows the parse.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

from agentloop import media
from agentloop.harnesses.pace import Hold, full_speed, paced
from agentloop.model_backends import Backend, Encoded
from agentloop.model_families import Parsed, Sampling


@dataclass
class Step:
    prompt: str  # the conversation rendered, as the template wrote it (media not yet expanded)
    encoded: Encoded  # what the model read: the text with media expanded, its token ids
    done: dict  # generate()'s last event: finish, raw, n_tokens, timings
    parsed: Parsed | None  # what the reply says (None when generation was stopped)


def take_step(
    llm: Backend,
    n: int,
    messages: list[dict],
    tools: list[dict] | None,
    thinking: bool,
    sampling: Sampling,
    emit: Callable[..., None],
    should_stop: Callable[[], bool],
    prev_prompt: str = "",
    on_token: Callable[[dict], None] | None = None,
    hold: Hold = full_speed,
) -> Step:
    """Step `n` of a conversation: `messages` (system prompt first) with `tools` (their schemas, for the chat
    template), generated with `sampling` until the model stops or `should_stop()`, `hold` waiting as the pace
    says. `prev_prompt` is the last step's, for what this one added; `on_token` sees each token as it comes."""
    # [quote:render]
    prompt = llm.render(messages, tools, thinking)
    encoded = llm.encode(prompt, media.parts(messages))
    # What this step added: all after the part it shares with the last step's prompt. The media sit in user
    # messages, before that part, so in the expanded text it starts further on by what they expanded into.
    expanded_by = len(encoded.text) - len(prompt)
    emit(
        "context",
        step=n,
        prompt=encoded.text,
        n_tokens=encoded.n_tokens,
        added_from=expanded_by + common_prefix(prompt, prev_prompt) if prev_prompt else 0,
        media_tokens=encoded.media_tokens,
        context_length=llm.context_length,
        roles=role_counts(messages),
        role_tokens=role_tokens(llm, messages, tools, thinking, prompt, encoded),
    )
    # [/quote:render]

    # [quote:generate]
    done: dict = {}
    for ev in paced(llm, n, encoded, sampling, should_stop, hold):
        kind = ev.pop("type")
        if kind == "done":
            done = ev
            continue
        emit(kind, step=n, **ev)  # prefill and each token, as they come
        if kind == "token" and on_token:
            on_token(ev)
    if done["finish"] == "user_stopped":
        return Step(prompt, encoded, done, None)
    hold("parse", n)  # step by step, the output is read when the reader presses Next
    if should_stop():  # stopped meanwhile: nothing is parsed, as when stopped while the model wrote
        return Step(prompt, encoded, done, None)
    # [/quote:generate]

    # [quote:parse]
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools or []}
    parsed = llm.family.parse(
        done["raw"], schemas, thinking_open=encoded.text.endswith(llm.family.thought_prefix)
    )
    return Step(prompt, encoded, done, parsed)
    # [/quote:parse]


# ---- the prompt's accounting, for the `context` event -----------------------------------------------------------


def common_prefix(a: str | list, b: str | list) -> int:
    """How many leading characters two strings share (or leading items, two lists)."""
    return len(os.path.commonprefix([a, b]))


def role_counts(messages: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in messages:
        counts[m["role"]] = counts.get(m["role"], 0) + 1
    return counts


def role_tokens(
    llm, messages: list[dict], tools, thinking: bool, prompt: str, encoded
) -> dict[str, int]:
    """Of the prompt's tokens, how many each role's messages take. The rendered `prompt` is cut where each
    message ends in it (message_end), the prompt's tokens up to each cut are counted as the model reads them
    (media expanded: model_position), and the tokens between two cuts go to the role of the message that ends
    at the second; the opened reply after the last message is the assistant's. Costs one render and one
    tokenization per message."""
    written = llm.encode(prompt).ids  # the rendered prompt's tokens, one per media placeholder
    position = model_position(llm, written, encoded)
    counts: dict[str, int] = {}
    before = 0  # the model's tokens up to the last cut
    cut = 0
    for k, message in enumerate(messages, 1):
        try:
            part = llm.render(messages[:k], tools, thinking, generation_prompt=False)
        except Exception:  # a template that refuses a conversation cut here: the next cut takes it
            continue
        cut = message_end(part, prompt, cut)
        # The prompt's tokens that lie wholly before the cut: a token the cut splits is the next message's.
        upto = position(common_prefix(llm.encode(prompt[:cut]).ids, written)) if cut else 0
        counts[message["role"]] = counts.get(message["role"], 0) + max(0, upto - before)
        before = max(before, upto)
    counts["assistant"] = counts.get("assistant", 0) + max(0, encoded.n_tokens - before)
    return counts


def message_end(part: str, prompt: str, cut: int) -> int:
    """Where the conversation rendered up to one message (`part`) ends in the whole `prompt`, at or after the
    last message's end `cut`. Usually `part` is the prompt's beginning. A template that writes earlier turns
    otherwise once the conversation goes on makes them differ before part's end (Qwen3.5 keeps the thinking
    block only in turns after the last question, so a follow-up's earlier turns lose theirs): then the message
    ends where the longest end of `part` found after `cut` ends, if that is past where they agree and what
    comes between is in `part` too.
    A template that closes the last turn otherwise (Gemma 4 ends a call's turn with <turn|> until a tool's
    result follows it) holds no such end there: the message ends where the two stop agreeing."""
    shared = common_prefix(part, prompt)
    if shared < len(part):
        # The longest tail of `part` found after `cut` (a tail found holds every shorter one: binary search).
        low, high = 0, len(part)
        while low < high:
            length = (low + high + 1) // 2
            if prompt.find(part[-length:], cut) >= 0:
                low = length
            else:
                high = length - 1
        start = prompt.find(part[-low:], cut)
        # Found past the agreeing part, right after what `part` holds too (a turn's header), not after
        # some later turn's end.
        if start + low > shared and prompt[cut:start] in part:
            return start + low
    return max(cut, shared)


def model_position(llm, written: list[int], encoded) -> Callable[[int], int]:
    """Turns a count of the rendered prompt's tokens into the count the model reads up to there: where the
    template wrote one placeholder for a file, the model reads the many tokens the file takes (Qwen3.5's one
    <|image_pad|> becomes 300; Gemma 4's <|image|> becomes <|image>, 266 of them and <image|>). The
    `written` tokens and the read ones are aligned, and a position maps to its place in the longer one."""
    if not encoded.media_tokens:
        return lambda n: n
    read = llm.encode(encoded.text).ids  # the expanded text, tokenized as any text is
    blocks = SequenceMatcher(None, written, read, autojunk=False).get_matching_blocks()

    def position(n: int) -> int:
        for a, b, size in blocks:
            if n < a + size:
                return b + max(0, n - a)
        return len(read)

    return position
