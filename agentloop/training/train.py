"""`agentloop models train-tiny`: teach a tiny checkpoint to call run_python and use its result, on this CPU.

Plain PyTorch: a fresh batch of synthetic conversations every step (data.py: rendered and tokenized as the
loop reads them), the shared system turn computed once (prefix_cache), and a loss on the model's own tokens
only, whose logits are the only ones computed (backward); the checkpoint and its card are checkpoint.py's.
Conversations are right-padded, not packed: Gated DeltaNet's PyTorch fallback refuses packed sequences; `parts`
> 1 computes each step's rows in that many pieces of like lengths (data.cut, backward), since half of a batch
padded whole is padding. `plain_share` asks that share of questions in the plain wording
(phrasing.training_question). Reproducible from the seed: the data, the initial weights and the order are all
seeded, and the number of steps is fixed rather than timed.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path

import torch

from agentloop.model_backends.precision import cpu_flags, cpu_name
from agentloop.model_backends.simple_backend import SimpleBackend, fresh_positions
from agentloop.training.checkpoint import save
from agentloop.training.conversations import DESCENDING_SHARE
from agentloop.training.data import batch, cut, pi_rows, shared_prefix


def prefix_cache(model, prefix_ids: torch.Tensor):
    """The model's cache after the shared prefix, computed once a step, without gradients. Every conversation
    starts with the same system prompt, most of its tokens; this way training pays for it once."""
    fresh_positions(model)
    with torch.no_grad():
        return model(input_ids=prefix_ids, use_cache=True).past_key_values


def rows_cache(prefix, size: int):
    """The prefix's cache repeated for `size` rows, on a copy: the rows' forward pass writes into the cache it is
    given (attention appends keys and values, Gated DeltaNet replaces its states), so each piece of a step needs
    a fresh copy of the one prefix cache."""
    cache = copy.deepcopy(prefix)

    def rows(value):  # a tensor of one row repeated for every row; anything else as it is
        one_row = isinstance(value, torch.Tensor) and value.dim() and value.shape[0] == 1
        return value.repeat_interleave(size, 0) if one_row else value

    # Attention's keys and values sit in tensors, Gated DeltaNet's states in dicts.
    for layer in cache.layers:
        for name, value in vars(layer).items():
            if isinstance(value, dict):
                setattr(layer, name, {k: rows(v) for k, v in value.items()})
            else:
                setattr(layer, name, rows(value))
        if hasattr(layer, "recurrent_states"):
            # The cache overwrites Gated DeltaNet's states in place, but backpropagation still needs the old ones:
            # for training, new states replace them instead.
            layer.record_past = True
            layer.update_recurrent_state = _replacer(layer.recurrent_states)
    return cache


def _replacer(states: dict):
    def update_recurrent_state(new, state_idx=0, **kwargs):
        states[state_idx] = new
        return new

    return update_recurrent_state


def backward(
    model, prefix_ids: torch.Tensor, pieces: list[tuple[torch.Tensor, torch.Tensor]]
) -> float:
    """The batch's loss, the mean over the model's own tokens in all its pieces, and its gradient, added piece by
    piece: the gradient of the whole batch in one tensor, without the padding that tensor would hold."""
    own = sum(int((labels[:, 1:] != -100).sum()) for _, labels in pieces)
    prefix = prefix_cache(model, prefix_ids)
    total = 0.0
    for input_ids, labels in pieces:
        cache = rows_cache(prefix, len(input_ids))
        # Logits only where the next token is the model's own: a quarter (Gemma) to under half (Qwen) of the
        # positions (bench/train_logits.py). The rest would be projected onto the whole vocabulary (and Gemma's
        # soft cap) for a loss that ignores them.
        targets = labels[:, 1:] != -100
        keep = torch.nn.functional.pad(targets, (0, 1))  # position t predicts token t + 1
        # Right padding: no position attends to a pad, so no attention mask is needed.
        logits = model(
            input_ids=input_ids, past_key_values=cache, use_cache=True, logits_to_keep=keep
        ).logits  # (own tokens of the part, vocabulary)
        loss = (
            torch.nn.functional.cross_entropy(
                logits.float(), labels[:, 1:][targets], reduction="sum"
            )
            / own
        )
        loss.backward()
        total += loss.item()
    return total


def this_cpu() -> str:
    """The CPU a phase ran on, as its record names it: a run resumed on another machine (--resume-after) has
    phases of both, and a phase's minutes mean little without it."""
    wide = "AVX512" if "avx512f" in cpu_flags() else "no AVX512"
    return f"{cpu_name()}, {os.cpu_count()} cores, {wide}"


# How this code words the questions, as the phase's record says (model_card describes each).
PHRASING = (
    "composed, word- and verb-first, chat with the counting cues, sorts without an order word"
)


def train(
    base: str,
    out: str | Path,
    steps: int = 1000,
    batch_size: int = 24,
    lr: float = 2e-3,
    seed: int = 0,
    repeat_share: float = 0.0,
    plain_share: float = 0.0,
    sort_share: float = 0.0,
    descending_share: float = DESCENDING_SHARE,
    session_share: float = 0.0,
    pi_share: float = 0.0,
    parts: int = 1,
    threads: int | None = None,
    log=print,
) -> Path:
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    backend = SimpleBackend(base, device="cpu")
    model = backend.model.train()
    pad_id = backend.tokenizer.pad_token_id or 0
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    warmup = 30
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (
            min(1.0, (s + 1) / warmup)
            * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))))
        ),
    )
    start = time.perf_counter()
    seen_tokens = 0
    prefixes = {thinking: shared_prefix(backend, thinking) for thinking in (False, True)}
    prefix_ids = {
        thinking: backend.tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
        for thinking, text in prefixes.items()
    }
    for step in range(1, steps + 1):
        if (
            pi_share and rng.random() < pi_share
        ):  # a batch of questions through pi's prompt and bash tool
            pi_prefix, pi_batch = pi_rows(backend, rng, batch_size, descending_share)
            pieces = cut(pi_batch, parts, pad_id)
            step_prefix = backend.tokenizer(
                pi_prefix, add_special_tokens=False, return_tensors="pt"
            ).input_ids
        else:
            thinking = rng.random() < 0.25  # a quarter of the batches with thinking on
            pieces = batch(
                backend, rng, batch_size, prefixes[thinking], thinking, pad_id,
                repeat_share, plain_share, sort_share, descending_share, session_share, parts=parts,
            )  # fmt: skip
            step_prefix = prefix_ids[thinking]
        optimizer.zero_grad(set_to_none=True)
        loss = backward(model, step_prefix, pieces)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        seen_tokens += sum(int((ids != pad_id).sum()) for ids, _ in pieces)
        if step % 10 == 0 or step == 1:
            elapsed = time.perf_counter() - start
            log(
                f"step {step}/{steps}  loss {loss:.4f}  {seen_tokens / elapsed:.0f} tok/s  {elapsed / 60:.1f} min"
            )
    model.eval()
    return save(
        backend,
        Path(out),
        {
            "steps": steps,
            "batch_size": batch_size,
            "lr": lr,
            "seed": seed,
            **({"repeat_share": repeat_share} if repeat_share else {}),
            **({"plain_share": plain_share} if plain_share else {}),
            **({"sort_share": sort_share} if sort_share else {}),
            **(
                {"descending_share": descending_share}
                if descending_share != DESCENDING_SHARE
                else {}
            ),
            **({"session_share": session_share} if session_share else {}),
            **({"pi_share": pi_share} if pi_share else {}),
            **({"parts": parts} if parts > 1 else {}),
            "phrasing": PHRASING,
            "threads": torch.get_num_threads(),
            "cpu": this_cpu(),
            "minutes": round((time.perf_counter() - start) / 60, 1),
        },
    )


# How each default model is trained: phases run in order, each from the last one's weights, each with a seed of
# its own (none of them the evaluation's), a cosine schedule restarting at every phase (one long cosine did worse).
# `train-tiny` runs them from tiny-<family>, all on today's data, two threads, nothing else running: with
# conversations, 166 minutes for Qwen and 164 for Gemma on the 2-core machines that trained them, so a run may
# span two sessions (--keep-phases, --resume-after). Each phase's minutes and threads are in training.json.
# SORTS: from the second phase on, a tenth of questions ask to check twice and a tenth are sorts on top of the
# usual mix (copying a list of eight numbers was the commonest miss), each step computed in four parts.
SORTS = {"repeat_share": 0.1, "sort_share": 0.1, "parts": 4}
# Issues 41 and 42: in SESSIONS' phases, that share of conversations are two to four questions in a row
# (sessions.py: follow-ups, denials, tool errors, a file written and read back) and that share of steps a batch of
# single questions through pi's own system prompt and bash tool (pi_format.py, thinking off), whose shared prefix
# (pi's prompt and tools, about 2,500 tokens) is computed once a step without gradients, as the built-in
# harness's is. A session's rows are longer (214 tokens for Qwen, 179 for Gemma, against 130 and 101 of single
# questions), so its steps cost about half as much again.
SESSIONS = {"session_share": 0.3, "pi_share": 0.1}
# [quote:qwen-recipe]
# Qwen trained on the usual mix wrote reverse=True about as often as training asked for it, whichever way a
# question asked (6 of the 40 sorts asked largest first, eval-tiny's fourth set): half its sorts are asked largest
# first, and its third phase is half sorts, which is where it learned to read the order; the phases after it, with
# the usual mix, bring back the calls that so many sorts crowd out. Conversations and pi's format come last, in
# two phases of their own: in three runs that had them from the second phase on, Qwen wrote the right code for
# only 11, 19 and 13 of the 40 sorts asked largest first, while seven phases of single questions and then one with
# SESSIONS wrote it for 34 of the 39 it answered with a call.
LARGEST_FIRST = {"descending_share": 0.5}
RECIPES = {
    # Gated DeltaNet's PyTorch fallback makes Qwen's steps about twice as slow as Gemma's: fewer, shorter phases.
    "qwen3_5": [
        {"steps": 700, "lr": 2e-3, "seed": 0, "parts": 4, **LARGEST_FIRST},
        {"steps": 900, "lr": 1.5e-3, "seed": 1, **SORTS, **LARGEST_FIRST},
        {"steps": 600, "lr": 1e-3, "seed": 2, **SORTS, "sort_share": 0.5, **LARGEST_FIRST},
        {"steps": 600, "lr": 1e-3, "seed": 3, **SORTS, **LARGEST_FIRST},
        {"steps": 550, "lr": 8e-4, "seed": 4, **SORTS, **LARGEST_FIRST},
        {"steps": 450, "lr": 6e-4, "seed": 5, **SORTS, **LARGEST_FIRST},
        {"steps": 350, "lr": 4e-4, "seed": 6, **SORTS, **LARGEST_FIRST},
        {"steps": 900, "lr": 8e-4, "seed": 7, **SORTS, **LARGEST_FIRST, **SESSIONS},
        {"steps": 600, "lr": 4e-4, "seed": 8, **SORTS, **LARGEST_FIRST, **SESSIONS},
    ],
    # [/quote:qwen-recipe]
    # tiny-gemma4 has two sets of keys and values (E2B has one): see tiny_models.gemma4_text_config.
    "gemma4": [
        {"steps": 900, "lr": 2e-3, "seed": 0, "parts": 4},
        {"steps": 1300, "lr": 1.5e-3, "seed": 1, **SORTS},
        {"steps": 1000, "lr": 1e-3, "seed": 2, **SORTS},
        {"steps": 1000, "lr": 1e-3, "seed": 3, **SORTS},
        {"steps": 1000, "lr": 1e-3, "seed": 4, **SORTS},
        {"steps": 1100, "lr": 8e-4, "seed": 5, **SORTS},
        {"steps": 1000, "lr": 7e-4, "seed": 6, **SORTS},
        {"steps": 700, "lr": 5e-4, "seed": 7, **SORTS},
        {"steps": 300, "lr": 3e-4, "seed": 8, **SORTS},
        # Qwen's shape: the nine phases of single questions, then two with SESSIONS (2,000 steps: a Gemma step
        # costs about half a Qwen step, so about the minutes of Qwen's 1,500).
        {"steps": 1200, "lr": 7e-4, "seed": 9, **SORTS, **SESSIONS},
        {"steps": 800, "lr": 3e-4, "seed": 10, **SORTS, **SESSIONS},
    ],
}


def kept_phase(kept: Path, phases: list[dict], k: int) -> Path:
    """kept/phase-k, checked to hold phases 1..k of `phases` (its training.json lists each phase trained):
    a run resumes only from its own recipe's phases, never from another model."""
    folder = kept / f"phase-{k}"
    if not 0 < k < len(phases):
        raise ValueError(f"--resume-after takes a phase between 1 and {len(phases) - 1}")
    try:
        done = json.loads((folder / "training.json").read_text())["phases"]
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"no kept phase {k} at {folder}: {exc}") from None
    trained = [{key: record.get(key) for key in phase} for record, phase in zip(done, phases)]
    if len(done) != k or trained != phases[:k]:
        raise ValueError(f"{folder} is not phases 1 to {k} of this recipe: {done}")
    return folder


def train_recipe(
    family: str,
    models_dir: Path,
    threads: int | None = None,
    log=print,
    phases_dir: Path | None = None,
    resume_after: int = 0,
) -> Path:
    """tiny-<family> through every phase of its recipe (RECIPES) into agent-<family>. Each phase
    before the last is a checkpoint of its own, in a temporary folder, or kept in `phases_dir` as phase-<i>
    (`eval-tiny --model` measures it: which phase taught or lost a skill). `resume_after` k: the same run,
    from its kept phase-k on (a recipe longer than one session). Each phase starts from the last one's saved
    weights with a fresh optimizer and its own seed, so a resumed run trains what the whole run would."""
    out = models_dir / f"agent-{family}"
    phases = RECIPES[family]
    with tempfile.TemporaryDirectory(prefix="agentloop-train-") as tmp:
        between = Path(phases_dir or tmp)
        base = models_dir / f"tiny-{family}"
        if resume_after:
            base = kept_phase(between, phases, resume_after)
        for i, phase in enumerate(phases):
            if i < resume_after:
                continue
            target = out if i == len(phases) - 1 else between / f"phase-{i + 1}"
            log(f"{family}: phase {i + 1} of {len(phases)}: {phase}")
            train(str(base), target, batch_size=24, threads=threads, log=log, **phase)
            base = target
    return out
