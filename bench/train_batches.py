"""Training steps computed in parts of like lengths (training/data.cut, train.backward) against in one piece.

Rows are right-padded, not packed (Gated DeltaNet's PyTorch code refuses packed sequences), so a batch in one
tensor costs what its longest row costs times its size. In parts, the same rows sorted by length, each part is
padded only to its own longest row, and the gradients are added: the same step. Prints, for each tiny checkpoint
(random weights, as a recipe's first phase starts): the share of what the model computes that is real tokens
rather than padding, in one piece and in PARTS parts; and training steps a minute with each, the ratio parts ÷
one piece. Both sides are measured in this one run, interleaved, through train.train itself (24 rows a step,
two threads).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends.simple_backend import SimpleBackend  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.training.data import batch, shared_prefix  # noqa: E402
from agentloop.training.train import train  # noqa: E402

PARTS, STEPS, ROUNDS = 4, 24, 2


def real_share(backend, parts: int) -> float:
    """Real tokens over the tensors' sizes, over 64 batches of 24 rows."""
    rng, prefix = random.Random(0), shared_prefix(backend, False)
    real = size = 0
    for _ in range(64):
        for ids, _ in batch(backend, rng, 24, prefix, False, 0, 0.1, parts=parts):
            real += int((ids != 0).sum())
            size += ids.numel()
    return real / size


def main() -> int:
    for family in ("qwen3_5", "gemma4"):
        base = MODELS_DIR / f"tiny-{family}"
        backend = SimpleBackend(str(base), device="cpu")
        print(
            f"{family}: real tokens {real_share(backend, 1):.2f} of what is computed in one piece,"
            f" {real_share(backend, PARTS):.2f} in {PARTS} parts"
        )
        seconds = {1: 0.0, PARTS: 0.0}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(ROUNDS):
                for parts in seconds:
                    start = time.perf_counter()
                    train(str(base), Path(tmp) / "out", steps=STEPS, seed=r, parts=parts,
                          repeat_share=0.1, threads=2, log=lambda line: None)  # fmt: skip
                    seconds[parts] += time.perf_counter() - start
        rate = {parts: ROUNDS * STEPS / (s / 60) for parts, s in seconds.items()}
        print(
            f"{family}: {rate[1]:.1f} steps/min in one piece, {rate[PARTS]:.1f} in {PARTS} parts:"
            f" {rate[PARTS] / rate[1]:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
