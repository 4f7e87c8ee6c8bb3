"""`agentloop models train-tiny` (its last phase for Gemma 4): teach the MTP drafter to guess what the model writes.

Distillation: the trained model reads a batch of data.py's synthetic conversations once, without a gradient, and
its keys and values, last hidden states and next-token distributions are what the drafter learns from; the model's
weights do not change. At every position p where the model writes, the drafter gets what mtp.py gives it at run
time (the token at p, the model's hidden state at p - 1, the model's keys and values before p) and learns the
model's distribution for the next token; then, `unroll` guesses deep, the next tokens with its own hidden state in
place of the model's, as in a round of guesses. A second loss teaches the centroids which cluster holds the model's
top token, since at run time only the best clusters' tokens are scored.
Left out: the real drafter's training data and recipe; this one only ever sees the book's conversations.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from agentloop.model_backends.mtp import Drafter
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.training.checkpoint import write_checkpoint
from agentloop.training.data import fresh_rows, shared_prefix


def conversations(
    backend: SimpleBackend, rng: random.Random, size: int, pad_id: int, prefixes: dict[bool, str]
):
    """`size` rows of whole conversations (the system turn included), right-padded, where the model wrote each token, and
    where the shared system turn ends (no row has a token of the model's before it)."""
    thinking = rng.random() < 0.25
    prefix = prefixes[thinking]
    prefix_ids = backend.tokenizer(prefix, add_special_tokens=False).input_ids
    rows = fresh_rows(backend, rng, size, prefix, thinking)
    width = len(prefix_ids) + max(len(ids) for ids, _ in rows)
    ids = torch.full((size, width), pad_id)
    own = torch.zeros((size, width), dtype=torch.bool)
    for row, (tokens, mine) in enumerate(rows):
        ids[row, : len(prefix_ids) + len(tokens)] = torch.tensor(prefix_ids + tokens)
        own[row, len(prefix_ids) : len(prefix_ids) + len(tokens)] = torch.tensor(mine)
    return ids, own, len(prefix_ids)


def masks(first: int, n_kv: int, window: int, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Queries at positions first … n_kv - 1 at once, each seeing the model's keys before its own position: all
    of them in full attention, the last window - 1 in sliding attention (what the cache holds at run time)."""
    p = torch.arange(first, n_kv)[:, None]
    k = torch.arange(n_kv)[None, :]

    def additive(
        allowed: torch.Tensor,
    ) -> torch.Tensor:  # 0 where a query may look, the lowest number elsewhere
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill(
            ~allowed, torch.finfo(dtype).min
        )[None, None]

    return {
        "full_attention": additive(k < p),
        "sliding_attention": additive((k < p) & (k > p - window)),
    }


def columns(x: torch.Tensor, start: int, n: int, fill) -> torch.Tensor:
    """x[:, start : start + n], filled up to n columns at the end."""
    part = x[:, start : start + n]
    pad = torch.full((x.shape[0], n - part.shape[1], *x.shape[2:]), fill, dtype=x.dtype)
    return torch.cat([part, pad], dim=1)


def distill(
    target: str,
    drafter_base: str,
    out: str | Path,
    steps: int = 600,
    batch_size: int = 12,
    lr: float = 2e-3,
    seed: int = 0,
    unroll: int = 3,
    threads: int | None = None,
    log=print,
) -> Path:
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    backend = SimpleBackend(target, device="cpu")
    drafter = Drafter(drafter_base, backend.model, "cpu", torch.float32)
    drafter.model.train()
    for p in backend.model.parameters():
        p.requires_grad_(False)
    text = backend.model.config.get_text_config()
    order = drafter.model.masked_embedding.token_ordering
    cluster = torch.empty_like(order)
    cluster[order] = (
        torch.arange(order.numel()) // drafter.model.masked_embedding.vocab_size_per_centroid
    )
    pad_id = backend.tokenizer.pad_token_id or 0
    optimizer = torch.optim.AdamW(drafter.model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 30) * max(0.1, 1 - s / steps)
    )
    start = time.perf_counter()
    prefixes = {
        thinking: shared_prefix(backend, thinking) for thinking in (False, True)
    }  # as train() does
    for step in range(1, steps + 1):
        ids, own, first = conversations(backend, rng, batch_size, pad_id, prefixes)
        with torch.no_grad():
            seen = backend.model(
                input_ids=ids,
                use_cache=False,
                output_hidden_states=True,
                return_shared_kv_states=True,
            )
        shared = {kind: (k.detach(), v.detach()) for kind, (k, v) in seen.shared_kv_states.items()}
        # Queries at every position p from the end of the system turn on, all at once.
        n = ids.shape[1] - first
        positions = torch.arange(first, ids.shape[1])[None].expand(ids.shape[0], -1)
        attend = masks(first, ids.shape[1], text.sliding_window, torch.float32)
        hidden = seen.hidden_states[-1][:, first - 1 : -1]  # the model's state at p - 1
        loss = torch.zeros(())
        for j in range(1, unroll + 1):
            tokens = columns(ids, first + j - 1, n, pad_id)  # the token at p + j - 1
            wanted = columns(
                seen.logits, first + j - 1, n, 0.0
            )  # the model's distribution after it
            where = columns(
                own, first + j, n, False
            )  # ... where the model wrote the token at p + j
            last, hidden = drafter.step(tokens, hidden, positions, shared, attend)
            mine = drafter.model.lm_head(last[where])
            loss = loss + F.cross_entropy(mine, F.softmax(wanted[where].float(), -1))
            centroids = drafter.model.masked_embedding.centroids(last[where])
            loss = loss + 0.5 * F.cross_entropy(centroids, cluster[wanted[where].argmax(-1)])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(drafter.model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 10 == 0 or step == 1:
            log(
                f"drafter step {step}/{steps}  loss {loss.item() / unroll:.4f}  {(time.perf_counter() - start) / 60:.1f} min"
            )
    drafter.model.eval()
    return save(
        drafter,
        Path(out),
        {
            "target": Path(target).name,
            "steps": steps,
            "batch_size": batch_size,
            "lr": lr,
            "seed": seed,
            "unroll": unroll,
            "minutes": round((time.perf_counter() - start) / 60, 1),
        },
    )


def save(drafter: Drafter, out: Path, recipe: dict) -> Path:
    """The distilled drafter in bfloat16, beside its base checkpoint's other files."""
    return write_checkpoint(
        drafter.model,
        drafter.folder,
        out,
        {"distilled": recipe},
        drafter_card(out.name, drafter.folder.name, recipe),
    )


def drafter_card(name: str, base: str, recipe: dict) -> str:
    return f"""# {name}

The MTP drafter of `{recipe["target"]}` (chapter 10 of the agentloop book): Gemma 4's drafter architecture
(Gemma4AssistantForCausalLM) at a tiny size, distilled on this project's CPU from `{recipe["target"]}`, so that
drafted decoding of the book's own Gemma model has guesses worth checking.

- **Base**: `{base}`, built by `agentloop models build-tiny` (random weights; its clusters are runs of consecutive
  token ids).
- **Data**: the synthetic conversations `{recipe["target"]}` was trained on (`agentloop/training/conversations.py`),
  read once by `{recipe["target"]}` per batch; the drafter learns that model's next-token distribution at every
  position the model writes, {recipe["unroll"]} guesses deep, and which cluster holds its top token.
- **Recipe**: `training.json`: {recipe["steps"]} steps of {recipe["batch_size"]} conversations at learning rate
  {recipe["lr"]}, seed {recipe["seed"]} (AdamW, linear decay); about {recipe["minutes"]:.0f} minutes on the CPU it
  was trained on.
- **What it cannot do**: draft for any other model. It reads `{recipe["target"]}`'s keys, values and hidden states.
- **Measure it**: `agentloop models eval-tiny --model {recipe["target"]}` prints tokens per forward pass with MTP;
  `python bench/mtp.py` also prints the share of guesses kept and the speed on this machine.
- **Retrain it**: `agentloop models train-tiny --family gemma4 --drafter-only` distills it again from the trained
  model.
"""


# How each family's drafter is distilled, from agent-<family> into agent-<family>-assistant.
DRAFTER_RECIPES = {"gemma4": {"steps": 600, "lr": 2e-3, "seed": 0}}


def distill_recipe(family: str, models_dir: Path, threads: int | None = None, log=print) -> Path:
    target = models_dir / f"agent-{family}"
    return distill(
        str(target),
        str(models_dir / f"tiny-{family}-assistant"),
        models_dir / f"agent-{family}-assistant",
        threads=threads,
        log=log,
        **DRAFTER_RECIPES[family],
    )
