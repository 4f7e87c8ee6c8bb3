"""VLLMBackend's speed: against SimpleBackend on the same model and prompt, and against a bare
streamed client.

A vLLM server serves agent-qwen3_5 (started here from .venv-vllm, `make vllm`, and stopped at the
end; or the one at $VLLM_URL). Each round, interleaved: VLLMBackend.generate()
(/inference/v1/generate and /v1/completions), a bare client that streams /v1/completions with the
same request body and only counts tokens, and SimpleBackend (transformers; float32 for this tiny model).
Every side decodes the same N tokens greedily (stop tokens off). Prints tokens/s and time to first
token for each, then the ratios (medians over the rounds), last: VLLMBackend ÷ SimpleBackend, and
VLLMBackend ÷ bare client (what the per-token events cost; target ≥ 0.9). The server's prefix cache
holds the prompt after the first request, so time to first token is a cached prefill on the vLLM
sides (SimpleBackend has no prefix cache).

With --real, the model is one of Qwen3.5-0.8B's real size with random weights (bench/prefill.py builds it in a
temporary folder), SimpleBackend in the precision it picks on this machine (model_backends/precision.py), N_REAL
tokens a side: what vLLM buys on a CPU at a size where the model's passes, not the loop, take the time.

    python bench/vllm.py            # agent-qwen3_5
    python bench/vllm.py --real     # Qwen3.5-0.8B's shapes, random weights
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends.simple_backend import SimpleBackend  # noqa: E402
from agentloop.model_backends.vllm.backend import NEUTRAL, VLLMBackend  # noqa: E402
from agentloop.model_backends.vllm.client import COMPLETIONS, GENERATE, stream  # noqa: E402
from agentloop.model_backends.vllm.local import LocalServer  # noqa: E402
from agentloop.model_families import Sampling  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402

MODEL = "agent-qwen3_5"
N = 256
N_REAL = 48  # at the real size, about 5 to 10 tokens a second on a 2-core CPU
ROUNDS = 5
PAUSE_S = 1.0
QUESTION = [{"role": "user", "content": "Count the letters in strawberry."}]


def backend_side(llm, encoded, n_new: int) -> tuple[float, float]:
    """(tokens/s from the request to the last token, ms to the first token) of llm.generate()."""
    start = time.perf_counter()
    first_ms, n = None, 0
    for ev in llm.generate(encoded, Sampling(temperature=0, max_new_tokens=n_new), lambda: False):
        if ev["type"] == "prefill":
            first_ms = ev["ms"]
        n += ev["type"] == "token"
    assert n == n_new, n
    return n / (time.perf_counter() - start), first_ms


def bare_side(llm, encoded, n_new: int) -> tuple[float, float]:
    """The same request body to /v1/completions, streamed, nothing done per token but counting."""
    body = llm._request(
        COMPLETIONS, encoded.ids, Sampling(temperature=0, max_new_tokens=n_new), n_new
    )
    start = time.perf_counter()
    first_ms, n = None, 0
    with stream(llm.url, COMPLETIONS, body, 60.0) as chunks:
        for chunk in chunks:
            for choice in chunk.get("choices") or []:
                got = len(choice.get("token_ids") or [])
                if got and first_ms is None:
                    first_ms = (time.perf_counter() - start) * 1000
                n += got
    assert n == n_new, n
    return n / (time.perf_counter() - start), first_ms


def settled(side, *args) -> tuple[float, float]:
    """One side's measurement, started a second after the last one ended: the other side's worker threads
    (vLLM's engine, torch's) spin on the cores for a while after their work before they sleep, and a side
    started at once shares the cores with them (SimpleBackend's first token at the real size, started at once
    after vLLM's: 1,219 ms; a second later: 243 ms)."""
    time.sleep(PAUSE_S)
    return side(*args)


def main(args: list[str]) -> None:
    # Stop tokens off on every side, so each decodes exactly n_new tokens.
    NEUTRAL["ignore_eos"] = True
    server = None
    model, n_new, rounds = str(MODELS_DIR / MODEL), N, ROUNDS
    if "--real" in args:
        from bench.prefill import build_real_size

        model = tempfile.mkdtemp(prefix="agentloop-bench-")
        build_real_size("qwen3_5", Path(model))
        n_new, rounds = N_REAL, 3
    url = os.environ.get("VLLM_URL")
    if not url:
        log = Path(tempfile.mkdtemp()) / "vllm.log"
        server = LocalServer(model, 8177, log).wait()
        url = server.url
    try:
        sides = {
            "generate": VLLMBackend(url, endpoint=GENERATE),
            "completions": VLLMBackend(url, endpoint=COMPLETIONS),
        }
        for llm in sides.values():
            llm.eos_ids = set()
        simple = SimpleBackend(model, device="cpu")
        simple.eos_ids = set()
        print(f"{Path(model).name}: SimpleBackend in {simple.dtype}, {n_new} tokens a side")
        encoded = simple.encode(simple.render(QUESTION, None, False))
        figures: dict[str, list[tuple[float, float]]] = {
            k: [] for k in ("generate", "completions", "bare", "simple")
        }
        for round_ in range(rounds + 1):  # the first round warms up every side and is not counted
            measured = {}
            for name, llm in sides.items():
                measured[name] = settled(backend_side, llm, encoded, n_new)
            measured["bare"] = settled(bare_side, sides["completions"], encoded, n_new)
            measured["simple"] = settled(backend_side, simple, encoded, n_new)
            if round_:
                for name, value in measured.items():
                    figures[name].append(value)
                print(
                    json.dumps({k: [round(v[0], 1), round(v[1], 1)] for k, v in measured.items()})
                )
        tok_s = {k: statistics.median(v[0] for v in vs) for k, vs in figures.items()}
        ttft = {k: statistics.median(v[1] for v in vs) for k, vs in figures.items()}
        for k in figures:
            print(f"{k}: {tok_s[k]:.1f} tok/s, first token {ttft[k]:.1f} ms")
        for endpoint in ("generate", "completions"):
            print(f"tok_per_s_vllm_{endpoint}_over_simple: {tok_s[endpoint] / tok_s['simple']:.3f}")
            print(
                f"first_token_ms_vllm_{endpoint}_over_simple: {ttft[endpoint] / ttft['simple']:.3f}"
            )
        for endpoint in ("generate", "completions"):
            print(
                f"tok_per_s_vllm_{endpoint}_over_bare_client: "
                f"{tok_s[endpoint] / tok_s['bare']:.3f} "
                f"(target ≥ 0.9)"
            )
    finally:
        if server is not None:
            server.stop()
        if "--real" in args:
            shutil.rmtree(model)  # the random-weight model, 1.5 GB


if __name__ == "__main__":
    main(sys.argv[1:])
