"""Prefix reuse (prefix_cache.py): a step computes only what its prompt does not share with the
last generation, and writes exactly what computing the whole prompt writes.

Whole runs of the agent loop (the book's trained tiny models; their tool calls run in the real
sandbox) are made twice, by a backend that reuses its cache and by one that computes every prompt
whole: the tokens must be the same, and the logits of each step's first token (the prefill's)
equal within float32 rounding.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator

import pytest
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS, SimpleHarness
from agentloop.model_backends import Encoded, simple_backend
from agentloop.model_backends.prefix_cache import (
    GROWING,
    MAX_STATES,
    cut_back,
    fresh_cache,
    nbytes,
)
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.model_families import Sampling
from tests.conftest import AGENTS as AGENT
from tests.conftest import load
from tests.test_unload import rss_mb

QUESTION = "What is 48213 * 377?"
GREEDY = Sampling(temperature=0, max_new_tokens=64)
# Logits of a few units in float32: a prompt computed in two parts changes only the last bits.
ATOL = 1e-4


def agent_backends(family: str) -> tuple[SimpleBackend, SimpleBackend]:
    """(one that reuses its cache, one that computes every prompt whole), the test's own: the tests
    look into the cache kept and hook the models."""
    return load(AGENT[family]), load(AGENT[family], prefix_reuse=False)


@contextlib.contextmanager
def watch_logits(backend: SimpleBackend) -> Iterator[list[torch.Tensor]]:
    """The last position's logits of every forward pass while the `with` lasts, as they are computed."""
    seen: list[torch.Tensor] = []
    hook = backend.model.register_forward_hook(
        lambda m, args, out: seen.append(out.logits[0, -1].clone())
    )
    try:
        yield seen
    finally:
        hook.remove()


def run(backend: SimpleBackend, settings: RunSettings, folder) -> tuple[list[dict], list]:
    """A whole run of the loop: its events, and the logits of each step's prefill."""
    events: list[dict] = []
    prefill_logits: list[torch.Tensor] = []
    with watch_logits(backend) as forwards:

        def emit(event: dict) -> None:
            events.append(event)
            if event["type"] == "prefill":  # emitted right after the prefill's forward pass
                prefill_logits.append(forwards[-1])

        SimpleHarness(backend, [], QUESTION, settings, emit, folder).run()
    return events, prefill_logits


def tokens_by_step(events: list[dict]) -> dict[int, list[int]]:
    steps: dict[int, list[int]] = {}
    for e in events:
        if e["type"] == "token":
            steps.setdefault(e["step"], []).append(e["id"])
    return steps


def ids_of(backend: SimpleBackend, messages: list[dict], thinking: bool = False) -> Encoded:
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    return backend.encode(backend.render([system, *messages], None, thinking))


def generate(backend: SimpleBackend, prompt: Encoded, sampling: Sampling = GREEDY) -> list[dict]:
    return list(backend.generate(prompt, sampling, lambda: False))


def token_ids(events: list[dict]) -> list[int]:
    return [e["id"] for e in events if e["type"] == "token"]


def first_difference(a: list[int], b: list[int]) -> int:
    return next(i for i, (x, y) in enumerate(zip([*a, -1], [*b, -2])) if x != y)


@pytest.mark.parametrize(
    "family,thinking,mtp",
    [
        ("qwen3_5", False, False),
        ("qwen3_5", True, False),
        ("gemma4", False, False),
        ("gemma4", True, False),
        ("gemma4", False, True),
    ],
)
def test_a_run_writes_the_same_tokens_with_reuse(family, thinking, mtp, folder, tmp_path):
    reusing, whole = agent_backends(family)
    settings = RunSettings(
        max_steps=4, max_new_tokens=96, thinking=thinking, mtp=mtp, auto_approve=True
    )
    ours, our_logits = run(reusing, settings, folder)
    (tmp_path / "again").mkdir()
    theirs, their_logits = run(whole, settings, tmp_path / "again")

    assert tokens_by_step(ours) == tokens_by_step(theirs)
    assert [e["type"] for e in ours] == [e["type"] for e in theirs]
    for step, (a, b) in enumerate(zip(our_logits, their_logits), 1):
        assert torch.allclose(a, b, rtol=0, atol=ATOL), (step, float((a - b).abs().max()))

    prefills = [e for e in ours if e["type"] == "prefill"]
    contexts = [e for e in ours if e["type"] == "context"]
    assert len(prefills) >= 2, "the trained model calls a tool first: a run has two steps or more"
    assert prefills[0]["reused"] == 0  # a run starts from nothing
    assert all(e["reused"] == 0 for e in theirs if e["type"] == "prefill")
    ids = lambda text: reusing.encode(text).ids  # noqa: E731
    for before, after, prefill in zip(contexts, contexts[1:], prefills[1:]):
        # At least what the two prompts share comes from the cache: usually the last step's whole prompt, less
        # where the template writes the history otherwise (Gemma 4's empty thought channel, thinking off, is
        # not in it: chapter 6). The prompt's last token is always computed.
        shared = first_difference(ids(before["prompt"]), ids(after["prompt"]))
        if after["added_from"] == len(before["prompt"]):
            assert shared == before["n_tokens"]
        assert min(shared, prefill["n_tokens"] - 1) <= prefill["reused"] < prefill["n_tokens"]


@pytest.mark.parametrize("family,mtp", [("qwen3_5", False), ("gemma4", False), ("gemma4", True)])
def test_a_prompt_prefilled_in_pieces_writes_what_one_pass_writes(
    family, mtp, folder, tmp_path, monkeypatch
):
    """simple_backend.PREFILL_PIECE cut down to 64 tokens: the first prompt (about 250 tokens for Gemma 4, 470
    for Qwen3.5) goes through in four passes or more, across tiny Gemma 4's 128-token sliding window, and each
    later step's new part in one or more, the cache carried; the run's tokens and each prefill's logits are
    those of prompts computed in one pass."""
    settings = RunSettings(max_steps=4, max_new_tokens=96, mtp=mtp, auto_approve=True)
    whole, _ = agent_backends(family)
    theirs, their_logits = run(whole, settings, folder)

    pieces, _ = agent_backends(family)
    piece = 64
    monkeypatch.setattr(simple_backend, "PREFILL_PIECE", piece)
    widths: list[int] = []
    hook = pieces.model.register_forward_pre_hook(
        lambda m, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    (tmp_path / "pieces").mkdir()
    ours, our_logits = run(pieces, settings, tmp_path / "pieces")
    hook.remove()

    assert tokens_by_step(ours) == tokens_by_step(theirs)
    for step, (a, b) in enumerate(zip(our_logits, their_logits, strict=True), 1):
        assert torch.allclose(a, b, rtol=0, atol=ATOL), (step, float((a - b).abs().max()))
    first = next(e for e in ours if e["type"] == "prefill")["n_tokens"]
    assert first > 3 * piece and widths[: first // piece] == [piece] * (first // piece)
    assert max(widths) == piece  # no pass, prefill or MTP's check, is wider than a piece


@pytest.mark.parametrize("family", sorted(AGENT))
def test_a_prompt_diverging_inside_the_last_reply_reuses_up_to_the_divergence(family):
    """As when a template renders the reply differently from the way the model wrote it."""
    reusing, whole = agent_backends(family)
    first = ids_of(reusing, [{"role": "user", "content": QUESTION}])
    written = token_ids(generate(reusing, first))
    held = reusing.prefix.ids
    assert held == (first.ids + written)[: len(held)] and len(held) == len(first.ids + written) - 1
    assert len(written) > 6
    diverged = len(first.ids) + 5  # the reply's sixth token differs
    rest = ids_of(reusing, [{"role": "user", "content": "And 2 + 2?"}]).ids[-12:]
    ids = held[:diverged] + [held[diverged] + 1] + rest
    second = Encoded(reusing.tokenizer.decode(ids), ids, len(ids))

    ours, theirs = generate(reusing, second), generate(whole, second)
    if family == "gemma4":  # attention layers are cut back to the divergence itself
        assert ours[0]["reused"] == diverged
    else:  # Gated DeltaNet restarts from its last copy before it: the end of the first prompt
        assert ours[0]["reused"] == len(first.ids)
    assert token_ids(ours) == token_ids(theirs)


@pytest.mark.parametrize("family", sorted(AGENT))
def test_a_template_that_rewrites_history_stops_the_reuse_there(family):
    """With a new question, both templates drop the earlier turn's thinking: the rendered history
    differs from what the cache holds from where the thinking began, and nothing after is reused."""
    reusing, whole = agent_backends(family)
    first = ids_of(reusing, [{"role": "user", "content": QUESTION}], thinking=True)
    generate(reusing, first, Sampling(temperature=0, max_new_tokens=48))
    held = reusing.prefix.ids
    reply = {
        "role": "assistant",
        "content": "It is 18176301.",
        reusing.family.thinking_key: "I should multiply them with the tool.",
    }
    second = ids_of(
        reusing,
        [{"role": "user", "content": QUESTION}, reply, {"role": "user", "content": "And 2 + 2?"}],
        thinking=True,
    )
    shared = first_difference(held, second.ids)
    assert shared <= len(first.ids), "the history is rewritten where the last reply began"

    ours, theirs = generate(reusing, second), generate(whole, second)
    # Gemma: cut back to the difference. Qwen3.5: its state was copied at the ends of the first
    # prompt and the reply only, both past the difference, so nothing is reused.
    assert ours[0]["reused"] == (shared if family == "gemma4" else 0)
    assert token_ids(ours) == token_ids(theirs)


@pytest.mark.parametrize("family", sorted(AGENT))
def test_a_different_conversation_reuses_only_what_it_shares(family):
    reusing, whole = agent_backends(family)
    generate(reusing, ids_of(reusing, [{"role": "user", "content": "Count the rs in strawberry."}]))
    other = ids_of(reusing, [{"role": "user", "content": "Convert 42 km to miles."}])
    shared = first_difference(reusing.prefix.ids, other.ids)
    with watch_logits(reusing) as seen, watch_logits(whole) as seen_whole:
        ours, theirs = generate(reusing, other), generate(whole, other)

    # The system prompt is the same; Qwen3.5 has no copy of its state there and computes it all.
    assert ours[0]["reused"] == (shared if family == "gemma4" else 0)
    assert token_ids(ours) == token_ids(theirs)
    assert torch.allclose(seen[0], seen_whole[0], rtol=0, atol=ATOL)


def test_the_same_prompt_again_recomputes_only_its_last_token():
    reusing, _ = agent_backends("gemma4")
    prompt = ids_of(reusing, [{"role": "user", "content": QUESTION}])
    first, again = generate(reusing, prompt), generate(reusing, prompt)
    assert again[0]["reused"] == prompt.n_tokens - 1
    assert token_ids(again) == token_ids(first)


@pytest.mark.parametrize("family", sorted(AGENT))
def test_forget_a_forced_reply_and_the_setting_start_from_nothing(family):
    reusing, whole = agent_backends(family)
    prompt = ids_of(reusing, [{"role": "user", "content": QUESTION}])
    generate(reusing, prompt)
    reusing.forget()
    assert generate(reusing, prompt)[0]["reused"] == 0

    reusing.force("Hello there")
    assert generate(reusing, prompt)[0]["reused"] == 0  # a forced reply computes it all
    assert reusing.prefix.cache is None  # and keeps nothing after it
    assert generate(whole, prompt)[0]["reused"] == generate(whole, prompt)[0]["reused"] == 0


@pytest.mark.parametrize("family", sorted(AGENT))
def test_a_new_position_is_written_in_place_and_the_model_reads_what_transformers_cache_gives(
    family,
):
    """fresh_cache()'s attention layers (GrowingLayer) against transformers' own DynamicCache: past Gemma 4's
    sliding window, the same logits at every decode pass, the same keys held; and a pass that fits the buffer
    writes into it (the buffer stays where it was), while cut_back() then a pass still reads the right positions."""
    backend, _ = agent_backends(family)
    config = backend.model.config
    ids = ids_of(backend, [{"role": "user", "content": QUESTION * 20}]).ids  # ~300 tokens
    assert len(ids) > (getattr(config.get_text_config(), "sliding_window", None) or 0)

    def passes(cache, tokens=8) -> list[torch.Tensor]:
        out = backend._forward(torch.tensor([ids]), cache)
        logits = [out.logits[0, -1]]
        for _ in range(tokens):
            token = torch.tensor([[int(logits[-1].argmax())]])
            out = backend._forward(token, out.past_key_values)
            logits.append(out.logits[0, -1])
        return logits

    with torch.inference_mode():
        ours, theirs = fresh_cache(config), DynamicCache(config=config)
        ours_logits, their_logits = passes(ours), passes(theirs)
        for a, b in zip(ours_logits, their_logits, strict=True):
            assert torch.allclose(a, b, rtol=0, atol=ATOL)
        attention = [i for i, layer in enumerate(ours.layers) if type(layer) in GROWING.values()]
        assert attention and all(isinstance(ours.layers[i], DynamicLayer) for i in attention)
        full = [i for i in attention if not ours.layers[i].is_sliding]
        for i in full:
            assert torch.equal(ours.layers[i].keys, theirs.layers[i].keys)
        where = {i: ours.layers[i].buffers[0].data_ptr() for i in attention}
        backend._forward(torch.tensor([[ids[-1]]]), ours)
        assert {i: ours.layers[i].buffers[0].data_ptr() for i in attention} == where

        if family != "gemma4":
            return  # Gated DeltaNet's state cannot be cut back (PrefixCache keeps copies of it)
        # Back to before the prompt's last token, then that token again: the logits of the prefill.
        cut_back(ours, len(ids) - 1)
        again = backend._forward(torch.tensor([[ids[-1]]]), ours)
        assert torch.allclose(again.logits[0, -1], ours_logits[0], rtol=0, atol=ATOL)


def test_gated_deltanet_state_copies_are_bounded():
    """Two copies a step (the prompt's end, the reply's end), the latest MAX_STATES kept."""
    reusing, _ = agent_backends("qwen3_5")
    prompt = ids_of(reusing, [{"role": "user", "content": QUESTION}])
    turn = "<|im_end|>\n<|im_start|>user\nAnd once more?<|im_end|>\n<|im_start|>assistant\n"
    more = reusing.encode(turn).ids
    held: list[int] = []
    for step in range(1, 5):
        events = generate(reusing, prompt, Sampling(temperature=0, max_new_tokens=8))
        assert events[0]["reused"] == len(held)  # all the last step held: the live state is there
        held = reusing.prefix.ids
        assert sorted(reusing.prefix.states)[-2:] == [len(prompt.ids), len(held)]
        assert len(reusing.prefix.states) == min(2 * step, MAX_STATES)
        ids = [*prompt.ids, *token_ids(events)] + more
        prompt = Encoded(reusing.tokenizer.decode(ids), ids, len(ids))


def test_unload_frees_the_kept_cache():
    after = []
    for _ in range(4):
        backend = load(AGENT["qwen3_5"])
        generate(
            backend,
            ids_of(backend, [{"role": "user", "content": "x " * 1500}]),
            Sampling(temperature=0, max_new_tokens=8),
        )
        # The attention layer's keys and values, Gated DeltaNet's states and their copies.
        assert nbytes(backend.prefix) > 1_000_000
        cache = weakref.ref(backend.prefix.cache)
        backend.unload()
        gc.collect()
        assert backend.prefix.cache is None and cache() is None, "something holds the cache"
        after.append(rss_mb())
    assert after[-1] - after[1] < 20, after
