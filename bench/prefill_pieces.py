"""What a prefill in pieces saves: SimpleBackend's 2,048-token prefill at a real size, in pieces of PREFILL_PIECE
tokens (how generate() runs it) against one pass over the whole prompt, in time and in memory.

The memory is the peak resident memory above what the loaded model held before the first prefill (Linux's VmHWM,
reset before each pass through /proc/self/clear_refs). The pieces go first: memory a pass frees stays with the
allocator, and a later pass reuses it, so a pass that needs less than an earlier one would only show the earlier
one's peak. Each model runs in a process of its own, built with random weights as bench/prefill.py builds it,
in the precision SimpleBackend picks on this CPU, and in bfloat16 as well where oneDNN packs it here.

    python bench/prefill_pieces.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from prefill import build_real_size, fits, machine, prefill_ms, prompt_of, rss_kib  # noqa: E402

from agentloop.model_backends import precision, simple_backend  # noqa: E402

TOKENS = 2048


def peaks(folder: str) -> dict:
    """One model's prefill of TOKENS tokens in pieces, then in one pass: ms and MB above the loaded model."""
    torch.manual_seed(0)
    backend = simple_backend.SimpleBackend(folder, device="cpu")
    prefill_ms(backend, prompt_of(backend, 64), 1)  # warm-up
    prompt = prompt_of(backend, TOKENS)
    before = rss_kib("VmRSS")
    figures = {"dtype": str(backend.dtype).removeprefix("torch."), "loaded_mb": before / 1024}
    piece = simple_backend.PREFILL_PIECE
    for way, width in (("pieces", piece), ("one_pass", TOKENS)):
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM back to the memory resident now
        simple_backend.PREFILL_PIECE = width
        figures[f"{way}_ms"] = prefill_ms(backend, prompt, 1)
        figures[f"{way}_above_mb"] = (rss_kib("VmHWM") - before) / 1024
    simple_backend.PREFILL_PIECE = piece
    return figures


def in_own_process(folder: Path, dtype: str) -> dict:
    command = [sys.executable, __file__, "--measure", str(folder)]
    env = {**os.environ, "AGENTLOOP_DTYPE": dtype}
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(args: list[str]) -> None:
    if args[:1] == ["--measure"]:
        print(json.dumps(peaks(args[1])))
        return
    print(machine())
    print(
        f"a {TOKENS:,}-token prefill, in pieces of {simple_backend.PREFILL_PIECE} and in one pass"
    )
    for family, name in (("qwen3_5", "Qwen3.5-0.8B"), ("gemma4", "Gemma-4-E2B")):
        with tempfile.TemporaryDirectory(prefix="agentloop-bench-") as tmp:
            total = sum(build_real_size(family, Path(tmp), weights=False).values())
            picked = str(precision.choose("cpu", Path(tmp)).dtype).removeprefix("torch.")
            tried = list(
                dict.fromkeys([picked] + (["bfloat16"] if precision.onednn_bfloat16() else []))
            )
            dtypes = [d for d in tried if fits(total, 4 if d == "float32" else 2)]
            if not dtypes:
                print(
                    f"{name} (random): not built: in {' or '.join(tried)} it needs more memory than is free here"
                )
                continue
            build_real_size(family, Path(tmp))
            for dtype in dtypes:
                f = in_own_process(Path(tmp), dtype)
                print(
                    f"{name} (random), {f['dtype']}, loaded {f['loaded_mb']:,.0f} MB: in pieces "
                    f"{f['pieces_ms']:,.0f} ms, peak {f['pieces_above_mb']:,.0f} MB above the loaded model; "
                    f"in one pass {f['one_pass_ms']:,.0f} ms, {f['one_pass_above_mb']:,.0f} MB "
                    f"(pieces ÷ one pass: memory {f['pieces_above_mb'] / f['one_pass_above_mb']:.2f}, "
                    f"time {f['pieces_ms'] / f['one_pass_ms']:.2f})"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
