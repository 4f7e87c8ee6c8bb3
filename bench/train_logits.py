"""Training steps that compute logits only at the model's own tokens (train.backward) against at every position.

The loss counts only the tokens the model writes, a quarter (Gemma) to under half (Qwen) of a row; the rest
(system turn, question, tool output) is context. Projecting those positions onto the whole vocabulary, and through
Gemma's soft cap, computes numbers the loss then ignores. train.backward passes the model a mask
(`logits_to_keep`) so that only the own positions reach the output layer. Prints, for each tiny checkpoint (random
weights, as a recipe's first phase starts), that share of positions, the largest difference in loss and gradient
between the two ways (float rounding only), and the steps a minute each runs (forward, backward and optimizer, 24
rows in 4 parts, two threads), the ratio own positions ÷ every position, measured in this one run, interleaved.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends.simple_backend import SimpleBackend  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.training.data import batch, shared_prefix  # noqa: E402
from agentloop.training.train import backward, prefix_cache, rows_cache  # noqa: E402

STEPS, ROUNDS = 12, 3


def every_position(model, prefix_ids, pieces) -> float:
    """The step as it was before: logits at every position, the positions that are not the model's own then
    ignored by the loss."""
    own = sum(int((labels[:, 1:] != -100).sum()) for _, labels in pieces)
    prefix, total = prefix_cache(model, prefix_ids), 0.0
    for input_ids, labels in pieces:
        cache = rows_cache(prefix, len(input_ids))
        logits = model(input_ids=input_ids, past_key_values=cache, use_cache=True).logits[:, :-1]
        loss = (
            torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).float(),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
            / own
        )
        loss.backward()
        total += loss.item()
    return total


def gradient(step, model, prefix_ids, pieces):
    model.zero_grad(set_to_none=True)
    loss = step(model, prefix_ids, pieces)
    return loss, [p.grad.clone() for p in model.parameters() if p.grad is not None]


def main() -> int:
    torch.set_num_threads(2)
    ways = {"every position": every_position, "own positions": backward}
    for family in ("qwen3_5", "gemma4"):
        backend = SimpleBackend(str(MODELS_DIR / f"tiny-{family}"), device="cpu")
        model = backend.model.train()
        prefix = shared_prefix(backend, False)
        prefix_ids = backend.tokenizer(
            prefix, add_special_tokens=False, return_tensors="pt"
        ).input_ids
        rng = random.Random(0)
        batches = [batch(backend, rng, 24, prefix, False, 0, 0.1, parts=4) for _ in range(STEPS)]
        own = sum(int((labels[:, 1:] != -100).sum()) for pieces in batches for _, labels in pieces)
        positions = sum(labels[:, 1:].numel() for pieces in batches for _, labels in pieces)
        (loss_a, grads_a), (loss_b, grads_b) = (
            gradient(step, model, prefix_ids, batches[0]) for step in ways.values()
        )
        apart = max(float((a - b).abs().max() / a.abs().max()) for a, b in zip(grads_a, grads_b))
        print(
            f"{family}: the model's own tokens are {own / positions:.2f} of the positions;"
            f" loss {loss_a:.6f} against {loss_b:.6f}, gradients apart by at most {apart:.1e} of their largest value"
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        seconds = dict.fromkeys(ways, 0.0)
        for _ in range(ROUNDS):
            for name, step in ways.items():
                start = time.perf_counter()
                for pieces in batches:
                    optimizer.zero_grad(set_to_none=True)
                    step(model, prefix_ids, pieces)
                    optimizer.step()
                seconds[name] += time.perf_counter() - start
        rate = {name: ROUNDS * STEPS / (s / 60) for name, s in seconds.items()}
        print(
            f"{family}: {rate['every position']:.1f} steps/min with logits at every position,"
            f" {rate['own positions']:.1f} at the own ones: {rate['own positions'] / rate['every position']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
