"""Decoding speed of SimpleBackend.generate() against transformers' own generate(), on the tiny checkpoints and
at Qwen3.5-0.8B's real size.

Prints, one a line and last: the ratio of tokens/s (generate() ÷ model.generate(), greedy, 512 tokens; target
≥ 0.95) for each tiny model, and the cost of the token at position 2,000 ÷ the cost at position 100, detokenization
and event building included (target ≤ 1.2), beside the same for the model's forward passes alone. Then the same tokens/s ratio for a random-weight model of
Qwen3.5-0.8B's real size (bench/prefill.py builds it in a temporary folder; 48 tokens a side, in the precision
SimpleBackend picks here, bfloat16 on a CPU with bfloat16 instructions: model_backends/precision.py; target ≥ 0.97,
the loop within 3 % of model.generate()). Both sides of each ratio are measured in this one run,
interleaved.

    python bench/decode.py            # tiny models, then the real size
    python bench/decode.py --tiny     # tiny models only
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from transformers import GenerationConfig

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends.prefix_cache import fresh_cache  # noqa: E402
from agentloop.model_backends.simple_backend import SimpleBackend, fresh_positions  # noqa: E402
from agentloop.model_families import Sampling  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402

N = 512
ROUNDS = 3
N_REAL = 48  # tokens a side at the real size (about 6 a second here)
COST_ROUNDS = 3


def prompt(backend):
    return backend.encode(
        backend.render(
            [{"role": "user", "content": "Count the letters in strawberry."}], None, False
        )
    )


def ours(backend, encoded, n) -> float:
    start = time.perf_counter()
    # With no stop tokens, as on the other side.
    backend.eos_ids, stops = set(), backend.eos_ids
    count = sum(
        ev["type"] == "token"
        for ev in backend.generate(
            encoded, Sampling(temperature=0, max_new_tokens=n), lambda: False
        )
    )
    backend.eos_ids = stops
    assert count == n, count
    return n / (time.perf_counter() - start)


def theirs(backend, encoded, n) -> float:
    ids = torch.tensor([encoded.ids])
    backend.model.generation_config.eos_token_id = None  # no stop tokens, as on the other side
    start = time.perf_counter()
    # No stop tokens, so both sides decode exactly n tokens.
    config = GenerationConfig(max_new_tokens=n, do_sample=False, pad_token_id=0)
    out = backend.model.generate(ids, generation_config=config)
    assert out.shape[-1] - ids.shape[-1] == n
    return n / (time.perf_counter() - start)


def window_costs(stamps: list[float], at: tuple[int, ...]) -> dict[int, float]:
    """The median of the 21 intervals between consecutive stamps around each position."""
    return {
        p: statistics.median(stamps[i + 1] - stamps[i] for i in range(p - 10, p + 11)) for p in at
    }


def token_costs(backend, encoded, at: tuple[int, ...]) -> dict[int, float]:
    """Seconds between consecutive token events around each position (window_costs), in each of COST_ROUNDS
    runs, then the median of the runs. On a shared 2-core machine a burst of other work can slow a few tokens,
    or one whole run: one window of nine in one run gave 0.77 to 1.33 for the same code."""
    rounds = []
    backend.eos_ids, stops = (
        set(),
        backend.eos_ids,
    )  # a random model may stop early; this measures positions
    for _ in range(COST_ROUNDS):
        stamps = []
        for ev in backend.generate(
            encoded, Sampling(temperature=0, max_new_tokens=max(at) + 12), lambda: False
        ):
            if ev["type"] == "token":
                stamps.append(time.perf_counter())
        rounds.append(window_costs(stamps, at))
    backend.eos_ids = stops
    return {p: statistics.median(r[p] for r in rounds) for p in at}


def model_costs(backend, encoded, at: tuple[int, ...]) -> dict[int, float]:
    """The same, for the model alone: its forward passes with the cache generate() gives it, the greedy token
    fed back, and nothing else (no sampling details, detokenization or events). What this ratio holds is the
    model's attention reading a longer cache; what generate() adds above it is the loop's own."""
    rounds = []
    with torch.inference_mode():
        for _ in range(COST_ROUNDS):
            fresh_positions(backend.model)
            cache, stamps = fresh_cache(backend.model.config), []
            out = backend._forward(torch.tensor([encoded.ids]), cache)
            for _ in range(max(at) + 12):
                out = backend._forward(out.logits[:, -1].argmax(-1, keepdim=True), cache)
                stamps.append(time.perf_counter())
            rounds.append(window_costs(stamps, at))
    return {p: statistics.median(r[p] for r in rounds) for p in at}


def ratio(backend, name: str, n: int, rounds: int) -> float:
    """generate()'s tokens/s ÷ model.generate()'s, the median of `rounds` interleaved pairs."""
    encoded = prompt(backend)
    ours(backend, encoded, 4), theirs(backend, encoded, 4)  # warm up
    ratios = []
    for _ in range(rounds):
        a, b = ours(backend, encoded, n), theirs(backend, encoded, n)
        ratios.append(a / b)
        print(f"{name}: generate() {a:.1f} tok/s, model.generate() {b:.1f} tok/s")
    return statistics.median(ratios)


def real_size_ratio() -> float:
    from bench.prefill import build_real_size

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "qwen3_5-0.8b-random"
        build_real_size("qwen3_5", folder)
        backend = SimpleBackend(str(folder), device="cpu")
        return ratio(backend, "Qwen3.5-0.8B (random weights)", N_REAL, ROUNDS)


def main() -> None:
    figures = []
    for name in ("tiny-qwen3_5", "tiny-gemma4"):
        backend = SimpleBackend(str(MODELS_DIR / name), device="cpu")
        encoded = prompt(backend)
        figures.append((f"decode_ratio_{name}", ratio(backend, name, N, ROUNDS), "target ≥ 0.95"))
        costs = token_costs(backend, encoded, (100, 2000))
        model = model_costs(backend, encoded, (100, 2000))
        for who, c in (("generate()", costs), ("the model alone", model)):
            print(
                f"{name}: {who}: token at 100 {c[100] * 1000:.2f} ms, at 2000 {c[2000] * 1000:.2f} ms"
            )
        figures.append(
            (f"token_cost_2000_over_100_{name}", costs[2000] / costs[100], "target ≤ 1.2")
        )
        figures.append(
            (
                f"model_alone_2000_over_100_{name}",
                model[2000] / model[100],
                "the model's own growth",
            )
        )
    if "--tiny" not in sys.argv:
        figures.append(("decode_ratio_qwen3_5_0_8b", real_size_ratio(), "target ≥ 0.97"))
    for label, value, target in figures:
        print(f"{label}: {value:.3f} ({target})")


if __name__ == "__main__":
    main()
