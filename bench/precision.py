"""Float32 against bfloat16 on this CPU, for the matrix products that make up most of Qwen3.5-0.8B's time.

A layer's MLP multiplies by a 1024 x 3584 matrix and back, and the last step by the 248,320 x 1024 embedding
(the lm_head). Prefill multiplies 512 rows at once; decode one row. Each product is timed four ways:

- float32: torch.nn.functional.linear on float32 weights (what SimpleBackend does on a CPU today);
- bfloat16: the same on bfloat16 weights and input (`model.to(torch.bfloat16)`);
- oneDNN bfloat16: the weights reordered once into oneDNN's blocked layout for this row count
  (torch.ops.mkldnn._reorder_linear_weight, as inductor's freezing does), then torch.ops.mkldnn._linear_pointwise;
- oneDNN bfloat16 with the weights reordered for 512 rows and used for one: one packed copy serving both phases.

It prints the CPU's bfloat16 features (AMX, AVX512-BF16) and torch's CPU capability, each time as the median of
several runs, the ratio float32 / that way (above 1: faster than float32), and the weights' bytes each way.

With --real it then runs the whole of Qwen3.5-0.8B's text model (random weights, built in memory from
bench/prefill.py's config) four ways, each in a process of its own so that its peak memory is its own: float32,
bfloat16, bfloat16 with every linear layer's weights packed by oneDNN as above (agentloop's PackedLinear), and
the same but for the lm_head tied to the embedding, left plain, as SimpleBackend packs a model
(model_backends/precision.py's pack_linears). For each: the seconds of a
512-token prefill (median of three), decode tokens/s (median of 20 one-token passes with the cache), peak RSS, and their ratios to
float32. Run it alone on the machine: the ratios are measured in one run, side by side.

    python bench/precision.py            # the matrix products
    python bench/precision.py --real     # and the whole model
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends.precision import (  # noqa: E402
    PACKED_FOR_ROWS,
    PackedLinear,
    cpu_flags,
    pack_linears,
)
from bench.prefill import machine, real_size_config, rss_kib  # noqa: E402

SHAPES = {  # name: (out_features, in_features), Qwen3.5-0.8B's
    "mlp up": (3584, 1024),
    "mlp down": (1024, 3584),
    "lm_head": (248_320, 1024),
}
PREFILL_ROWS = PACKED_FOR_ROWS  # what SimpleBackend packs its weights for
RUNS = {1: 41, PREFILL_ROWS: 7}  # more runs where one is short


def cpu_features() -> str:
    flags = cpu_flags()
    have = [f for f in ("amx_bf16", "amx_tile", "avx512_bf16", "avx512f") if f in flags]
    return ", ".join(have) or "none of amx_bf16, avx512_bf16, avx512f"


def median_ms(fn, runs: int) -> float:
    fn(), fn()  # warm-up: oneDNN builds its kernel for the shape at the first call
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def ways(weight32: torch.Tensor, rows: int) -> dict:
    """Each way's (function, weight bytes) for `rows` input rows."""
    x32 = torch.randn(rows, weight32.shape[1])
    weight16, x16 = weight32.to(torch.bfloat16), x32.to(torch.bfloat16)
    packed = torch.ops.mkldnn._reorder_linear_weight(weight16, rows)
    packed_prefill = torch.ops.mkldnn._reorder_linear_weight(weight16, PREFILL_ROWS)

    def onednn(w):
        return lambda: torch.ops.mkldnn._linear_pointwise(x16, w, None, "none", [], "")

    return {
        "float32": (lambda: F.linear(x32, weight32), weight32.nbytes),
        "bfloat16": (lambda: F.linear(x16, weight16), weight16.nbytes),
        "oneDNN bf16": (onednn(packed), packed.nbytes),
        "oneDNN bf16, packed for 512": (onednn(packed_prefill), packed_prefill.nbytes),
    }


# -- the whole model ----------------------------------------------------------------------------------------------

WAYS = ("float32", "bfloat16", "oneDNN bf16", "oneDNN bf16, tied lm_head plain")


def real_size_model(way: str):
    """Qwen3.5-0.8B's text model with random weights, in `way`."""
    from transformers import AutoConfig, AutoModelForCausalLM

    text = real_size_config("qwen3_5")["text_config"]
    config = AutoConfig.for_model(**{**text, "tie_word_embeddings": True})
    torch.manual_seed(0)
    dtype = torch.float32 if way == "float32" else torch.bfloat16
    model = AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
    if way == "oneDNN bf16":
        # Every linear layer, the tied lm_head too: its packed copy stays beside the embedding's weights.
        for module in model.modules():
            for name, child in list(module.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(module, name, PackedLinear(child))
    elif way == "oneDNN bf16, tied lm_head plain":
        pack_linears(model)  # as SimpleBackend packs them (model_backends/precision.py)
    return model


def measure_real(way: str) -> dict:
    model = real_size_model(way)
    ids = torch.randint(
        1000, 200_000, (1, PREFILL_ROWS), generator=torch.Generator().manual_seed(0)
    )
    with torch.inference_mode():
        model(input_ids=ids[:, :16])  # warm-up
        prefills = []
        # The median of three: one prefill's time varies by a third on a shared machine.
        for _ in range(3):
            t0 = time.perf_counter()
            out = model(input_ids=ids, use_cache=True)
            prefills.append(time.perf_counter() - t0)
        prefill_s = statistics.median(prefills)
        passes = []
        for _ in range(24):
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            t0 = time.perf_counter()
            out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
            passes.append(time.perf_counter() - t0)
    return {
        "prefill_s": prefill_s,
        "decode_tok_s": 1 / statistics.median(passes[4:]),
        "peak_rss_gb": rss_kib("VmHWM") / 2**20,
    }


def report_real() -> None:
    figures = {}
    for way in WAYS:
        command = [sys.executable, __file__, "--measure-real", way]
        figures[way] = json.loads(
            subprocess.run(command, check=True, capture_output=True, text=True).stdout
        )
    base = figures["float32"]
    print(f"Qwen3.5-0.8B's text model, random weights, {PREFILL_ROWS}-token prefill, then decode:")
    for way, f in figures.items():
        print(
            f"{way:12s} prefill {f['prefill_s']:6.2f} s ({base['prefill_s'] / f['prefill_s']:4.2f}x)  "
            f"decode {f['decode_tok_s']:5.2f} tok/s ({f['decode_tok_s'] / base['decode_tok_s']:4.2f}x)  "
            f"peak {f['peak_rss_gb']:5.2f} GB ({f['peak_rss_gb'] / base['peak_rss_gb']:4.2f}x)"
        )


def main() -> None:
    torch.manual_seed(0)
    print(f"{machine()}, capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"bfloat16 features: {cpu_features()}")
    with torch.inference_mode():
        for name, (out_f, in_f) in SHAPES.items():
            weight32 = torch.randn(out_f, in_f) / in_f**0.5
            for rows in (PREFILL_ROWS, 1):
                phase = "prefill" if rows > 1 else "decode"
                timed = ways(weight32, rows)
                times = {way: median_ms(fn, RUNS[rows]) for way, (fn, _) in timed.items()}
                for way, (_, nbytes) in timed.items():
                    print(
                        f"{name:9s} {phase:7s} {rows:4d} rows  {way:28s} {times[way]:9.3f} ms  "
                        f"float32/this {times['float32'] / times[way]:5.2f}  "
                        f"weights {nbytes / 2**20:7.1f} MiB"
                    )
            del weight32


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure-real"]:
        print(json.dumps(measure_real(sys.argv[2])))
    else:
        main()
        if "--real" in sys.argv[1:]:
            report_real()
