"""unload() hands the model's memory back."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from agentloop.model_backends.simple_backend import SimpleBackend, pick_device
from tests.conftest import TINY


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="a CUDA machine: tests/test_cuda.py checks the GPU"
)
def test_pick_device_is_the_cpu_here():
    assert pick_device() == "cpu"


def test_unload_frees_the_model_and_repeated_loads_do_not_grow():
    after = []
    for _ in range(4):
        backend = SimpleBackend(str(TINY["qwen3_5"]), device="cpu")
        assert backend.dtype.is_floating_point and str(backend.dtype) == "torch.float32"
        model = weakref.ref(backend.model)
        backend.unload()
        gc.collect()
        assert model() is None, "something still holds the model after unload()"
        after.append(rss_mb())
    # The first cycle pays for imports and caches; later cycles must not keep the ~15 MB of float32 weights each.
    assert after[-1] - after[1] < 20, after
