"""What MTP's parts cost at Gemma 4 E2B's real shapes, so chapter 10 can say what an acceptance buys on this machine.

MTP trades passes of the model for passes of the drafter: each round the drafter guesses six tokens one after the
other, and one pass of the model over seven tokens (its own pick and the six guesses) checks them all. Whether that
is faster depends on what a pass over seven tokens costs next to a pass over one, and on what the drafter's round
costs, at the real model's size. This measures both, with random weights, in the precision SimpleBackend picks on
this machine (precision.py), through SimpleBackend's own forward pass and the drafter's own guess():

- the model: google/gemma-4-E2B-it's text model (bench/prefill.py's gemma4_e2b), every product at its real shape.
  One table is smaller: the per-layer embeddings (PER_LAYER_ROWS rows where the real one has 262,144), which a pass
  only looks rows up in, never multiplies; whole, that table holds 2.3 billion of the model's parameters, more than
  float32 fits in this machine's memory beside the rest.
- the drafter: google/gemma-4-E2B-it-assistant's shapes (E2B_ASSISTANT): 4 layers 256 wide, reading the model's
  keys and values, and its clustered output, 2,048 clusters of 128 tokens of which the best 32 are scored.

Prints the median ms of plain decoding's pass over one token (t(1)), of MTP's pass over k = 1 to 7 tokens (which
also keeps the hidden states the drafter reads) at a 512-token context and its ratio to t(1), the median ms of a
drafter round, then the speed-up a round buys for each number of guesses the model keeps, 0 to 6: (kept + 1)
tokens for one pass over seven and a round, against kept + 1 plain passes, (kept + 1) * t(1) / (t(7) + round); and the same for agent-gemma4's tokens per pass from its card, as the toy's
place on the curve. Left out: sampling's own cost (the same either way), and a GPU (the device script runs
this there when one is lent).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from precision import median_ms  # noqa: E402
from prefill import build_real_size, machine, prompt_of  # noqa: E402

from agentloop.model_backends.prefix_cache import cut_back, fresh_cache  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.tiny_models import build_gemma4_assistant  # noqa: E402

PER_LAYER_ROWS = 16_384  # the tiny tokenizer's ids are all below it
E2B_ASSISTANT = {
    "hidden_size": 256,
    "intermediate_size": 2048,
    "num_centroids": 2048,
    "centroid_intermediate_top_k": 32,
}
CONTEXT, ROUNDS = 512, 7


def build(folder: Path) -> None:
    """The E2B-shaped model (its per-layer table cut to PER_LAYER_ROWS) and its drafter, `folder`-assistant."""
    build_real_size(
        "gemma4", folder, weights=False
    )  # the config and the tiny checkpoint's tokenizer files
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["vocab_size_per_layer_input"] = PER_LAYER_ROWS
    (folder / "config.json").write_text(json.dumps(config))
    from transformers import AutoConfig, AutoModelForMultimodalLM

    torch.manual_seed(0)
    model = AutoModelForMultimodalLM.from_config(
        AutoConfig.from_pretrained(folder), dtype=torch.bfloat16
    )
    model.save_pretrained(folder)
    del model
    drafter = folder.with_name(folder.name + "-assistant")
    drafter.mkdir()
    build_gemma4_assistant(drafter, folder, E2B_ASSISTANT)


def measure(folder: Path) -> dict:
    from agentloop.model_backends.simple_backend import SimpleBackend

    backend = SimpleBackend(str(folder), device="cpu")
    drafter = backend.load_drafter()
    prompt = prompt_of(backend, CONTEXT)
    with torch.inference_mode():
        cache = fresh_cache(backend.model.config)
        out = backend._forward(torch.tensor([prompt.ids]), cache, hidden=True)
        hidden = out.hidden_states[-1][:, -1:]
        token = prompt.ids[
            -1
        ]  # an id the per-layer table holds (a random model's pick may lie past it)

        def verify(
            k: int, hidden: bool = True
        ):  # a pass over k tokens, then the cache back to the context
            def run():
                backend._forward(torch.tensor([[token] * k]), cache, keep=k, hidden=hidden)
                cut_back(cache, CONTEXT)

            return run

        # Plain decoding's pass keeps no hidden states (_one_at_a_time's); MTP's keep them for the drafter.
        plain = median_ms(verify(1, hidden=False), ROUNDS)
        passes = {k: median_ms(verify(k), ROUNDS) for k in range(1, 8)}
        round_ms = median_ms(lambda: drafter.guess(token, hidden, cache), ROUNDS)
    return {
        "dtype": str(backend.dtype).removeprefix("torch."),
        "packed": backend.precision.packed,
        "plain": plain,
        "passes": passes,
        "round": round_ms,
        "guesses": drafter.n_guesses,
    }


def card_tokens_per_pass() -> float:
    card = (MODELS_DIR / "agent-gemma4" / "README.md").read_text()
    return float(re.search(r"mtp_tokens_per_forward: ([\d.]+)", card).group(1))


def main() -> None:
    print(machine())
    with tempfile.TemporaryDirectory(prefix="agentloop-bench-") as tmp:
        folder = Path(tmp) / "gemma4-e2b"
        start = time.perf_counter()
        build(folder)
        print(
            f"Gemma-4-E2B shapes (random) and its drafter's: built in {time.perf_counter() - start:.0f} s"
        )
        m = measure(folder)
    packed = ", linear layers packed by oneDNN" if m["packed"] else ""
    print(f"SimpleBackend's precision here: {m['dtype']}{packed}; context {CONTEXT} tokens")
    t1 = m["plain"]
    print(f"plain decoding's pass over 1 token: {t1:.1f} ms")
    for k, ms in m["passes"].items():
        print(
            f"MTP's pass over {k} token{'s' if k > 1 else ''}: {ms:.1f} ms ({ms / t1:.2f}x plain)"
        )
    print(
        f"drafter round ({m['guesses']} guesses): {m['round']:.1f} ms ({m['round'] / t1:.2f}x plain)"
    )
    cost = (
        m["passes"][m["guesses"] + 1] + m["round"]
    )  # one round: the drafter's guesses, one pass over them all
    for kept in range(m["guesses"] + 1):
        print(
            f"guesses kept a round {kept}: {(kept + 1) * t1 / cost:.2f}x plain decoding's tokens/s"
        )
    per_pass = card_tokens_per_pass()
    print(
        f"agent-gemma4's {per_pass:.2f} tokens per pass (its card) at these shapes: "
        f"{per_pass * t1 / cost:.2f}x plain decoding's tokens/s"
    )
    even = cost / t1
    print(f"break-even: {even:.2f} tokens per pass ({even - 1:.2f} guesses kept a round)")


if __name__ == "__main__":
    main()
