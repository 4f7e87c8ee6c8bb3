"""The training data: synthetic conversations (conversations.py) as the loop reads them.

Each conversation is rendered through the model's own chat template with the system prompt and tools
SimpleHarness sends, step by step as the loop renders it (each step's prompt as one text, then what the model
writes), each token marked whether the model wrote it, in as many rows as the template's prompts need. Every conversation starts with the same
system turn: shared_prefix is that start, which train.py's prefix cache computes once. A conversation may be a
session of several questions (sessions.py), or a question through pi's prompt and tools (pi_rows, pi_format.py). Left out: the loop and
the checkpoint (train.py, checkpoint.py).
"""

from __future__ import annotations

import random

import torch

from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.tools import TOOLS
from agentloop.training.conversations import (
    DESCENDING_SHARE,
    UNTRAINED,
    Task,
    conversation,
    task,
)
from agentloop.training.phrasing import plain_question, training_question
from agentloop.training.sessions import session

TRAINED_TOOLS = ("run_python",)  # the tools SimpleHarness gives the model by default
# Of the conversations through pi, this share are several questions in pi's session (pi_format.pi_session): a
# model trained on single questions through pi answered a follow-up in pi's own loop with an unrelated call.
PI_SESSION_SHARE = 0.3


def messages_of(t: Task | list[Task], thinking: bool, thinking_key: str) -> list[dict]:
    """The messages SimpleHarness holds after a good run of the task, or of each question of a session in turn
    (each run's history is the earlier ones' messages), system prompt not included."""
    return [
        m
        for one in ([t] if isinstance(t, Task) else t)
        for m in conversation(one, thinking, thinking_key)
    ]


def rows(
    backend: SimpleBackend, t: Task | list[Task], thinking: bool
) -> list[list[tuple[str, bool]]]:
    """One conversation (a task, or a session's tasks) as the texts the loop tokenizes, each marked whether the
    model wrote it: each step's prompt, then what the model writes (the family's `write_output`). A step whose
    prompt continues what the row holds so far (Qwen3.5 within one question) joins that row; one whose prompt
    does not (Gemma 4 drops the empty thought channel and the thought from its history) starts a row of its own,
    whole, as the loop's prefix reuse computes it anew from where the two differ. A step marked UNTRAINED (a
    failed call the model should not learn to write) is in the text, not among the model's own tokens."""
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    marked = [system, *messages_of(t, thinking, backend.family.thinking_key)]
    return rows_of(backend, marked, [TOOLS[name].schema() for name in TRAINED_TOOLS], thinking)


def rows_of(
    backend: SimpleBackend, marked: list[dict], tools: list[dict], thinking: bool
) -> list[list[tuple[str, bool]]]:
    """`rows` for messages as the loop holds them, the system turn included, with the tools it sends (the
    built-in harness's, or pi's: pi_format.py)."""
    messages = [{k: v for k, v in m.items() if k != UNTRAINED} for m in marked]
    out: list[list[tuple[str, bool]]] = []
    held = ""  # the text the last row holds
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = backend.render(messages[:i], tools, thinking)
        written = model_output(backend.family, m, thinking)
        own = not marked[i].get(UNTRAINED)
        if out and prompt.startswith(held):
            out[-1] += [(prompt[len(held) :], False), (written, own)]
        else:
            out.append([(prompt, False), (written, own)])
        held = prompt + written
    return out


def model_output(family, message: dict, thinking: bool) -> str:
    """What the model writes for an assistant message of the conversation."""
    calls = [
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])
    ]
    thought = message.get(family.thinking_key, "") if thinking else None
    return family.write_output(thought, message["content"], calls)


def shared_prefix(backend: SimpleBackend, thinking: bool) -> str:
    """The start every conversation shares (the system turn with the tools), cut just after a special token, so
    that tokenizing it apart gives the same tokens as tokenizing the whole prompt."""
    a, b = (rows(backend, Task("greeting", q, answer="."), thinking)[0][0][0] for q in ("Hi", "Yo"))
    return common_start(backend, a, b)


def example(
    backend,
    rng: random.Random,
    prefix: str,
    thinking: bool,
    repeat_share: float = 0.0,
    plain_share: float = 0.0,
    sort_share: float = 0.0,
    descending_share: float = DESCENDING_SHARE,
    session_share: float = 0.0,
) -> list[tuple[list[int], list[bool]]]:
    """One fresh conversation's rows after the shared prefix, each as token ids and whether each is the
    model's own; that share of questions in the plain wording, that share sorts (on top of those WEIGHTS
    draws: copying a list of up to eight numbers is the hardest copying a tiny model does), that share of
    all sorts largest first, and that share of conversations a session of several questions (sessions.py)
    instead of one. A share of 0 draws nothing more from `rng`."""
    if session_share and rng.random() < session_share:
        conversation_of: Task | list[Task] = session(rng, descending_share=descending_share)
    else:
        plain = plain_share and rng.random() < plain_share
        ask = plain_question if plain else training_question
        kind = "sorting" if sort_share and rng.random() < sort_share else None
        conversation_of = task(rng, kind, repeat_share, ask, descending_share)
    return tokenized(backend, rows(backend, conversation_of, thinking), prefix)


def tokenized(backend, rows_: list[list[tuple[str, bool]]], prefix: str):
    """Rows as token ids after `prefix`, and whether each token is the model's own."""
    out = []
    for row in rows_:
        ids: list[int] = []
        mine: list[bool] = []
        for n, (text, own) in enumerate(row):
            if n == 0:
                assert text.startswith(prefix)
                text = text[len(prefix) :]
            part = backend.tokenizer(text, add_special_tokens=False).input_ids
            ids += part
            mine += [own] * len(part)
        out.append((ids, mine))
    return out


def common_start(backend, a: str, b: str) -> str:
    """The start two prompts share, cut just after a special token (so that tokenizing it apart gives the same
    tokens as tokenizing the whole prompt)."""
    common = a[: next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)]
    specials = backend.tokenizer.added_tokens_encoder
    return common[: max(common.rfind(tok) + len(tok) for tok in specials if tok in common)]


def pi_rows(
    backend, rng: random.Random, size: int, descending_share: float = DESCENDING_SHARE
) -> tuple[str, list[tuple[list[int], list[bool]]]]:
    """A batch's worth of questions run through pi (pi_format.py), thinking off: the prefix they share
    (pi's system prompt, naming where a checkout put pi, and its tools, drawn once a batch, so the prefix cache
    holds them) and `size` rows after it; that share of its sorts asked largest first."""
    from agentloop.training.pi_format import pi_folder, pi_messages, pi_session, system_prompt

    system, key = system_prompt(rng, pi_folder(rng)), backend.family.thinking_key
    rendered: list[list[list[tuple[str, bool]]]] = []
    while sum(map(len, rendered)) < size or len({r[0][0][0] for r in rendered}) < 2:
        # A share of them a conversation pi kept in its session: its follow-ups read the earlier answers.
        if rng.random() < PI_SESSION_SHARE:
            t = pi_session(rng, descending_share)
        else:
            t = task(rng, descending_share=descending_share)
        rendered.append(rows_of(backend, *pi_messages(t, system, key), False))
    firsts = [r[0][0][0] for r in rendered]
    prefix = common_start(backend, firsts[0], next(f for f in firsts if f != firsts[0]))
    out = [row for r in rendered for row in tokenized(backend, r, prefix)]
    return prefix, out[:size]


def fresh_rows(
    backend, rng, size: int, prefix: str, thinking: bool, *shares: float
) -> list[tuple[list[int], list[bool]]]:
    """The first `size` rows of fresh conversations (a conversation may fill more than one); `shares` are
    example's."""
    out: list[tuple[list[int], list[bool]]] = []
    while len(out) < size:
        out += example(backend, rng, prefix, thinking, *shares)
    return out[:size]


def batch(
    backend,
    rng,
    size: int,
    prefix: str,
    thinking: bool,
    pad_id: int,
    *shares: float,
    parts: int = 1,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`size` rows of fresh conversations in `parts` tensors (`cut`); `shares` are example's (repeat_share,
    plain_share, sort_share, descending_share, session_share)."""
    return cut(fresh_rows(backend, rng, size, prefix, thinking, *shares), parts, pad_id)


def cut(
    examples: list[tuple[list[int], list[bool]]], parts: int, pad_id: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A batch's rows sorted by length and cut into `parts` tensors, each padded only to its own longest row:
    padded to the longest of a random draw, half of a batch is padding, which the model computes all the
    same. The step still trains on the whole batch (train.backward adds the parts' gradients)."""
    if parts > 1:
        examples = sorted(examples, key=lambda e: len(e[0]))
    step = -(-len(examples) // parts)
    return [padded(examples[i : i + step], pad_id) for i in range(0, len(examples), step)]


def padded(
    examples: list[tuple[list[int], list[bool]]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows right-padded to the longest of them, and their labels: -100 wherever the model is not trained."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id)
    labels = torch.full((len(examples), width), -100)
    for row, (ids, mine) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(ids)] = torch.tensor([t if own else -100 for t, own in zip(ids, mine)])
    return input_ids, labels
