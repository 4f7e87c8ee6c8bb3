"""The training data: synthetic conversations (conversations.py) as the loop reads them.

Each conversation is rendered through the model's own chat template with the system prompt and tools
SimpleHarness sends, and tokenized segment by segment as the loop tokenizes them (the prompt as one text, then
what the model writes), each token marked whether the model wrote it. Every conversation starts with the same
system turn: shared_prefix is that start, which train.py's prefix cache computes once. Left out: the loop and
the checkpoint (train.py, checkpoint.py).
"""

from __future__ import annotations

import random

import torch

from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.tools import TOOLS
from agentloop.training.conversations import Task, conversation, task

TRAINED_TOOLS = ("run_python",)  # the tools SimpleHarness gives the model by default


def segments(backend: SimpleBackend, t, thinking: bool) -> list[tuple[str, bool]]:
    """One conversation as the texts the loop tokenizes, in order, each marked whether the model wrote it: each
    step's prompt (what the template adds since the last step) and then the model's output for that step."""
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    messages = [system, *conversation(t, thinking, backend.family.thinking_key)]
    tools = [TOOLS[name].schema() for name in TRAINED_TOOLS]
    parts: list[tuple[str, bool]] = []
    done = ""  # the text already covered
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        prompt = backend.render(messages[:i], tools, thinking)
        assert prompt.startswith(done), "each step's prompt must continue the last step's"
        written = model_output(backend, messages, i, tools, thinking, prompt)
        parts += [(prompt[len(done) :], False), (written, True)]
        done = prompt + written
    return parts


def model_output(backend, messages, i, tools, thinking, prompt) -> str:
    """What the model writes for messages[i]: the rendered conversation less its prompt, ending at the stop token
    the loop stops at. Gemma's <|tool_response> belongs to the result the template writes next, so it is found
    there."""
    full = backend.render(messages[: i + 1], tools, thinking, generation_prompt=False)
    assert full.startswith(prompt), (
        "the chat template must render a message after the prompt it was given"
    )
    written = full[len(prompt) :].removesuffix("\n")
    if not any(written.endswith(p) for p in backend.family.stop_pieces):
        following = backend.render(messages[: i + 2], tools, thinking, generation_prompt=False)[
            len(prompt) + len(written) :
        ]
        written += next(p for p in backend.family.stop_pieces if following.startswith(p))
    return written


def shared_prefix(backend: SimpleBackend, thinking: bool) -> str:
    """The start every conversation shares (the system turn with the tools), cut just after a special token, so
    that tokenizing it apart gives the same tokens as tokenizing the whole prompt."""
    a, b = (
        segments(backend, Task("greeting", q, answer="."), thinking)[0][0] for q in ("Hi", "Yo")
    )
    common = a[: next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)]
    specials = backend.tokenizer.added_tokens_encoder
    return common[: max(common.rfind(tok) + len(tok) for tok in specials if tok in common)]


def example(
    backend, rng: random.Random, prefix: str, thinking: bool, repeat_share: float = 0.0
) -> tuple[list[int], list[bool]]:
    """One fresh conversation after the shared prefix, as token ids and whether each is the model's own."""
    ids: list[int] = []
    mine: list[bool] = []
    for n, (text, own) in enumerate(
        segments(backend, task(rng, repeat_share=repeat_share), thinking)
    ):
        if n == 0:
            assert text.startswith(prefix)
            text = text[len(prefix) :]
        part = backend.tokenizer(text, add_special_tokens=False).input_ids
        ids += part
        mine += [own] * len(part)
    return ids, mine


def batch(
    backend, rng, size: int, prefix: str, thinking: bool, pad_id: int, repeat_share: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """`size` conversations right-padded into one tensor, with labels -100 wherever the model is not trained."""
    examples = [example(backend, rng, prefix, thinking, repeat_share) for _ in range(size)]
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((size, width), pad_id)
    labels = torch.full((size, width), -100)
    for row, (ids, mine) in enumerate(examples):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(ids)] = torch.tensor([t if own else -100 for t, own in zip(ids, mine)])
    return input_ids, labels
