"""Prefill and decode speed of SimpleBackend on this CPU, float32 against bfloat16 at the real sizes, and what
prefix reuse saves at step 2.

For each model, measured in a process of its own (so that its peak memory is its own): prefill ms
of a 512- and a 2,048-token prompt, decode tokens/s, peak RSS, and the step-2 prefill with reuse ÷
without at 2,048 tokens. Step 1 is a 1,968-token prompt and 16 generated tokens; step 2 extends it
with the reply and 64 new tokens. The two step-2 prefills alternate, on the same backend, with
reuse switched on and off. Target for the ratio: ≤ 0.2.

Models: the two tiny checkpoints (in the precision SimpleBackend picks for them: float32), and random-weight
models of the real sizes, built in a temporary folder (never committed): Qwen3.5-0.8B's text model with its real
vocabulary (248,320 tokens), and Gemma 4 E2B's (262,144; 4.6 billion parameters, 9.3 GB in bfloat16), each
where the memory free holds it. Each real-size model runs twice, in bfloat16 as SimpleBackend runs it on a CPU
with bfloat16 instructions (its linear layers packed by oneDNN: model_backends/precision.py) and in float32
where that fits too, and the ratios of the two are printed: issue 45's targets are prefill 3x as fast, decode
1.5x, peak memory 0.6x. The configs follow the checkpoints' config.json as chapter 3 describes them, in the
shapes of the tiny ones (tiny_models.py's *_text_config, at the real sizes); the parameter counts printed
check them.

    python bench/prefill.py            # tiny models, then the real sizes
    python bench/prefill.py --tiny     # tiny models only
    python bench/prefill.py --real     # real-size models only
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_backends import Encoded, precision  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.tiny_models import gemma4_text_config, qwen3_5_text_config  # noqa: E402

WORDS = (
    "the cache keeps every layer state so that a step computes only what is new in its prompt"
).split()


# -- real-size configs ------------------------------------------------------------------------


def qwen3_5_0_8b() -> dict:
    """Qwen/Qwen3.5-0.8B's text model: 24 layers (18 Gated DeltaNet, 6 full attention), hidden
    1024."""
    return qwen3_5_text_config(
        248_320,
        mrope_section=(11, 11, 10),
        hidden_size=1024,
        intermediate_size=3584,
        num_hidden_layers=24,
        layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 6,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=256,
        linear_num_key_heads=16,
        linear_num_value_heads=16,
        linear_conv_kernel_dim=4,
        max_position_embeddings=262_144,
    )


def gemma4_e2b() -> dict:
    """google/gemma-4-E2B-it's text model: 35 layers (28 sliding-window of 512, 7 full), hidden
    1536, the last 20 sharing earlier layers' keys and values, 256-wide per-layer embeddings."""
    return gemma4_text_config(
        262_144,
        hidden_size=1536,
        intermediate_size=6144,
        num_hidden_layers=35,
        layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 7,
        sliding_window=512,
        num_kv_shared_layers=20,
        use_double_wide_mlp=True,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=256,
        global_head_dim=512,
        hidden_size_per_layer_input=256,
        max_position_embeddings=131_072,
    )


def real_size_config(family: str) -> dict:
    """tiny-<family>'s config.json with the real model's text config in place of its own."""
    config = json.loads((MODELS_DIR / f"tiny-{family}" / "config.json").read_text())
    text = config["text_config"]
    real = qwen3_5_0_8b() if family == "qwen3_5" else gemma4_e2b()
    # The tiny model's special-token ids stay valid: they are below the real vocabulary's size.
    kept = ("eos_token_id", "pad_token_id", "bos_token_id", "model_type")
    config["text_config"] = {**{k: v for k, v in text.items() if k in kept}, **real}
    config["tie_word_embeddings"] = True
    return config


def build_real_size(family: str, folder: Path, weights: bool = True) -> dict:
    """A random-weight model of the real size in `folder`, with the tiny checkpoint's tokenizer and
    template (its ids are a subset of the real vocabulary's rows). Returns the parameter counts by
    part. weights=False: only counted, on PyTorch's meta device, nothing allocated."""
    from transformers import AutoConfig, AutoModelForMultimodalLM

    tiny = MODELS_DIR / f"tiny-{family}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(real_size_config(family)))
    for f in tiny.iterdir():
        if f.name != "config.json" and not f.name.endswith(".safetensors") and f.is_file():
            shutil.copy(f, folder / f.name)
    if not weights:
        with torch.device("meta"):
            return parameter_counts(
                AutoModelForMultimodalLM.from_config(AutoConfig.from_pretrained(folder))
            )
    torch.manual_seed(0)
    model = AutoModelForMultimodalLM.from_config(
        AutoConfig.from_pretrained(folder), dtype=torch.bfloat16
    )
    counts = parameter_counts(model)
    model.save_pretrained(folder)
    return counts


def parameter_counts(model) -> dict[str, int]:
    parts = {"layers": 0, "embedding": 0, "per_layer_embedding": 0, "other": 0}
    for name, p in model.named_parameters():
        if ".layers." in name and "language_model" in name:
            parts["layers"] += p.numel()
        elif name.endswith("language_model.embed_tokens.weight"):
            parts["embedding"] += p.numel()
        elif "embed_tokens_per_layer" in name:
            parts["per_layer_embedding"] += p.numel()
        else:
            parts["other"] += p.numel()
    return parts


# -- measuring, in a process of its own ------------------------------------------------------


def prompt_of(backend, n: int) -> Encoded:
    """A chat prompt of exactly n tokens: a long user message, rendered, cut to length."""
    words = " ".join(WORDS[i % len(WORDS)] for i in range(n))
    ids = backend.encode(backend.render([{"role": "user", "content": words}], None, False)).ids
    ids = ids[: n - 3] + ids[-3:]  # keep the template's generation prompt at the end
    assert len(ids) == n, len(ids)
    return Encoded(backend.tokenizer.decode(ids), ids, n)


def run(backend, prompt: Encoded, n_new: int) -> list[dict]:
    from agentloop.model_families import Sampling

    # A random model may stop early; this measures positions.
    backend.eos_ids, stops = set(), backend.eos_ids
    try:
        sampling = Sampling(temperature=0, max_new_tokens=n_new)
        return list(backend.generate(prompt, sampling, lambda: False))
    finally:
        backend.eos_ids = stops


def prefill_ms(backend, prompt: Encoded, rounds: int) -> float:
    backend.prefix.enabled = False
    try:
        return statistics.median(run(backend, prompt, 1)[0]["ms"] for _ in range(rounds))
    finally:
        backend.prefix.enabled = True


def step_two(backend, context: int, rounds: int) -> tuple[list[float], list[float], int]:
    """(step-2 prefill ms with reuse, without, one a round; tokens reused) at `context` tokens."""
    step1 = prompt_of(backend, context - 80)
    result = backend.encode("\n<tool_response>\n18176301\n</tool_response>\nThe answer is")
    with_reuse, without, reused = [], [], 0
    for _ in range(rounds):
        backend.forget()
        reply = [e["id"] for e in run(backend, step1, 16) if e["type"] == "token"]
        ids = step1.ids + reply + result.ids
        ids = ids + step1.ids[: context - len(ids)]  # up to exactly `context` tokens
        step2 = Encoded(backend.tokenizer.decode(ids), ids, len(ids))
        first = run(backend, step2, 1)[0]
        with_reuse.append(first["ms"])
        reused = first["reused"]
        backend.prefix.enabled = False
        without.append(run(backend, step2, 1)[0]["ms"])
        backend.prefix.enabled = True
    return with_reuse, without, reused


def measure(folder: str, rounds: int, decode_tokens: int) -> dict:
    from agentloop.model_backends.simple_backend import SimpleBackend

    torch.manual_seed(0)
    backend = SimpleBackend(
        folder, device="cpu"
    )  # in the precision AGENTLOOP_DTYPE asks, if it does
    # Where the peak comes from: loading (float32 holds the files' bfloat16 tensors and their converted copies
    # for a moment) or the runs after it (a 2,048-token prefill's working memory).
    loaded = {"loaded_rss_mb": rss_kib("VmRSS") / 1024, "load_peak_mb": rss_kib("VmHWM") / 1024}
    run(backend, prompt_of(backend, 64), 4)  # warm up
    figures = {
        f"prefill_ms_{n}": prefill_ms(backend, prompt_of(backend, n), rounds) for n in (512, 2048)
    }
    figures.update(loaded)
    done = run(backend, prompt_of(backend, 128), decode_tokens)[-1]
    figures["decode_tok_per_s"] = done["tok_per_s"]
    reuse, full, figures["step2_reused"] = step_two(backend, 2048, rounds)
    figures["step2_rounds"] = list(zip(reuse, full))
    figures["step2_ms_reuse"] = statistics.median(reuse)
    figures["step2_ms_full"] = statistics.median(full)
    figures["step2_ratio"] = figures["step2_ms_reuse"] / figures["step2_ms_full"]
    figures["peak_rss_mb"] = rss_kib("VmHWM") / 1024
    figures["dtype"] = str(backend.dtype).removeprefix("torch.")
    figures["packed"] = backend.precision.packed
    return figures


def rss_kib(field: str = "VmHWM") -> int:
    """This process's resident memory: now (VmRSS) or its peak since its exec (VmHWM). getrusage's ru_maxrss keeps
    the peak of the process that forked it too: here the parent, which built the real-size model before starting
    this one."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def in_own_process(folder: Path, rounds: int, decode_tokens: int, dtype: str | None = None) -> dict:
    """measure() in a process of its own, in `dtype` (AGENTLOOP_DTYPE) or the precision SimpleBackend picks."""
    command = [sys.executable, __file__, "--measure", str(folder), str(rounds), str(decode_tokens)]
    env = {k: v for k, v in os.environ.items() if k != "AGENTLOOP_DTYPE"}
    if dtype:
        env["AGENTLOOP_DTYPE"] = dtype
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fits(parameters: int, bytes_each: int) -> bool:
    """Whether a model of `parameters` in `bytes_each` bytes a weight fits in the memory free now, with half as
    much again for what loading holds while it converts, a 2,048-token prefill's activations and the process."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return parameters * bytes_each * 1.5 < int(line.split()[1]) * 1024
    return False


def report_against_float32(name: str, way: dict, base: dict) -> None:
    """The issue's four ratios, measured in this run: `way` against float32 on the same machine."""
    packed = ", linear layers packed by oneDNN" if way["packed"] else ""
    print(
        f"{name}: {way['dtype']}{packed} against float32: prefill 512 tokens "
        f"{base['prefill_ms_512'] / way['prefill_ms_512']:.2f}x as fast, 2,048 tokens "
        f"{base['prefill_ms_2048'] / way['prefill_ms_2048']:.2f}x; decode "
        f"{way['decode_tok_per_s'] / base['decode_tok_per_s']:.2f}x; peak memory "
        f"{way['peak_rss_mb'] / base['peak_rss_mb']:.2f}x (targets: prefill >= 3, decode >= 1.5, memory <= 0.6)"
    )


def report(name: str, figures: dict) -> None:
    print(
        f"{name} in {figures['dtype']}: prefill 512 tokens {figures['prefill_ms_512']:.0f} ms, 2,048 tokens "
        f"{figures['prefill_ms_2048']:.0f} ms; decode {figures['decode_tok_per_s']:.1f} tok/s; "
        f"peak RSS {figures['peak_rss_mb']:.0f} MB (loaded {figures['loaded_rss_mb']:.0f} MB, "
        f"peak while loading {figures['load_peak_mb']:.0f} MB)"
    )
    print(
        f"{name}: step 2 at 2,048 tokens: {figures['step2_ms_reuse']:.1f} ms with reuse "
        f"({figures['step2_reused']} reused) vs {figures['step2_ms_full']:.1f} ms without "
        f"(medians; each round, with ÷ without: "
        f"{', '.join(f'{a:.0f} ÷ {b:.0f}' for a, b in figures['step2_rounds'])})"
    )


def machine() -> str:
    threads = torch.get_num_threads()
    return f"{precision.cpu_name()}, {os.cpu_count()} cores, torch {torch.__version__}, {threads} threads"


def main(args: list[str]) -> None:
    if args[:1] == ["--measure"]:
        print(json.dumps(measure(args[1], int(args[2]), int(args[3]))))
        return
    print(machine())
    figures = []
    for family in () if "--real" in args else ("qwen3_5", "gemma4"):
        name = f"tiny-{family}"
        measured = in_own_process(MODELS_DIR / name, rounds=5, decode_tokens=128)
        report(name, measured)
        figures.append((f"step2_reuse_over_full_{name}", measured["step2_ratio"]))
    real = [] if "--tiny" in args else ["qwen3_5", "gemma4"]
    for family in real:
        name = {"qwen3_5": "Qwen3.5-0.8B", "gemma4": "Gemma-4-E2B"}[family] + " (random)"
        with tempfile.TemporaryDirectory(prefix="agentloop-bench-") as tmp:
            counts = build_real_size(family, Path(tmp), weights=False)
            total = sum(counts.values())
            sizes = f"{total / 1e9:.2f}B parameters ({', '.join(f'{k} {v / 1e6:.0f}M' for k, v in counts.items())})"
            if not fits(total, 2):  # the files are written in bfloat16
                print(
                    f"{name}: {sizes}, {total * 2 / 1e9:.1f} GB in bfloat16: more than is free here, not built"
                )
                continue
            start = time.perf_counter()
            build_real_size(family, Path(tmp))
            print(f"{name}: {sizes}, built in {time.perf_counter() - start:.0f} s")
            picked = precision.choose("cpu", Path(tmp))
            print(
                f"{name}: SimpleBackend picks {str(picked.dtype).removeprefix('torch.')} here: {precision.WHY[picked.why]}"
            )
            ways = {
                "bfloat16": in_own_process(Path(tmp), rounds=3, decode_tokens=24, dtype="bfloat16")
            }
            if fits(total, 4):
                ways["float32"] = in_own_process(
                    Path(tmp), rounds=3, decode_tokens=24, dtype="float32"
                )
            else:
                print(
                    f"{name}: {total * 4 / 1e9:.1f} GB in float32, more than is free here: not measured"
                )
        for measured in ways.values():
            report(name, measured)
            figures.append(
                (
                    f"step2_reuse_over_full_{name.split()[0]}_{measured['dtype']}",
                    measured["step2_ratio"],
                )
            )
        if "float32" in ways:
            report_against_float32(name, ways["bfloat16"], ways["float32"])
    for label, value in figures:
        print(f"{label}: {value:.3f} (target ≤ 0.2)")


if __name__ == "__main__":
    main(sys.argv[1:])
