"""SimpleBackend on a CUDA GPU, on the trained checkpoints (agent-gemma4 with its MTP drafter, agent-qwen3_5):
pick_device() chooses the GPU, the weights go there in bfloat16, greedy decoding writes what the CPU writes, MTP
writes what plain decoding writes, an image's tensors reach the GPU, and unload() gives the GPU's memory back.

CI has no GPU: every test here is skipped there, and runs on a CUDA machine (`python -m pytest tests/test_cuda.py`).
The numbers each test measures are printed (`pytest -rP` shows them).
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_backends.simple_backend import SimpleBackend, pick_device
from agentloop.model_families import Sampling
from agentloop.tools import TOOLS
from tests import media_files
from tests.conftest import AGENTS, built
from tests.test_media import encoded, greedy_both_ways, saved  # chapter 7's checks, here on the GPU

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="needs a CUDA GPU: these tests run on a CUDA machine (CI has none)",
)

# Both models answer these with a run_python call. On the CPU in float32 the most likely token leads the next by at
# least 0.96 of probability at every step, so bfloat16's rounding cannot change a greedy pick: a difference means
# the GPU computed something else.
QUESTIONS = ["What is 48213 * 9127?", "How many r's are in strawberry?"]
MIB = 1 << 20


def gpu_backend(family: str) -> SimpleBackend:
    """A backend on the trained checkpoint with no device named: pick_device() chooses."""
    built(AGENTS[family])
    return SimpleBackend(str(AGENTS[family]))


@pytest.fixture(scope="module")
def gpu_gemma4():
    b = gpu_backend("gemma4")
    b.load_drafter()
    yield b
    b.unload()


@pytest.fixture(scope="module")
def gpu_qwen3_5():
    b = gpu_backend("qwen3_5")
    yield b
    b.unload()


@pytest.fixture(params=sorted(AGENTS))
def family(request) -> str:
    return request.param


def answer(b: SimpleBackend, question: str, **sampling) -> tuple[list[dict], dict]:
    """The greedy answer to `question`, asked as the harness asks it (its system prompt, run_python offered), from
    nothing cached: its token events and its done event."""
    b.forget()
    messages = [
        {"role": "system", "content": SYSTEM_WITH_TOOLS},
        {"role": "user", "content": question},
    ]
    prompt = b.encode(b.render(messages, [TOOLS["run_python"].schema()], False))
    settings = Sampling(temperature=0, max_new_tokens=128, **sampling)
    events = list(b.generate(prompt, settings, lambda: False))
    return [e for e in events if e["type"] == "token"], events[-1]


def models_of(b: SimpleBackend) -> dict[str, torch.nn.Module]:
    return {"model": b.model, **({"drafter": b.drafter.model} if b.drafter else {})}


def test_pick_device_is_the_gpu_here():
    assert pick_device() == "cuda"


def test_every_weight_is_on_the_gpu_in_bfloat16(family, request):
    b = request.getfixturevalue(f"gpu_{family}")
    assert b.device == "cuda" and b.dtype == torch.bfloat16
    assert (family == "gemma4") == (b.drafter is not None)  # the drafter must be checked too
    for name, model in models_of(b).items():
        tensors = [*model.named_parameters(), *model.named_buffers()]
        assert not [n for n, t in tensors if t.device.type != "cuda"], f"{name}: left off the GPU"
        # The files are bfloat16 and so is every weight; buffers keep their own (RoPE's inv_freq is float32).
        assert not [n for n, p in model.named_parameters() if p.dtype != torch.bfloat16], name
        print(f"{family} {name}: {len(tensors)} tensors on cuda")


def test_greedy_on_the_gpu_writes_what_the_cpu_writes(family, request):
    gpu, cpu = request.getfixturevalue(f"gpu_{family}"), request.getfixturevalue(f"agent_{family}")
    assert cpu.device == "cpu" and cpu.dtype == torch.float32
    for question in QUESTIONS:
        got, end = answer(gpu, question)
        want, _ = answer(cpu, question)
        assert [e["id"] for e in got] == [e["id"] for e in want], question
        assert end["finish"] == "stop_token" and end["n_tokens"] == len(got)
        # Each token reported as on the CPU: greedy takes the top one; bfloat16 moves its p by a few thousandths.
        for g, c in zip(got, want):
            assert g["rank"] == 1 and len(g["top"]) == 5 and g["top"][0]["id"] == g["id"]
            assert abs(g["p"] - c["p"]) < 0.05, (question, g["index"], g["p"], c["p"])
        dp = max(abs(g["p"] - c["p"]) for g, c in zip(got, want))
        print(
            f"{family} {question!r}: {len(got)} tokens as on the CPU, largest |p_gpu - p_cpu| {dp:.4f}"
        )


def test_mtp_on_the_gpu_writes_what_plain_greedy_writes(gpu_gemma4):
    b = gpu_gemma4
    for question in QUESTIONS:
        plain, plain_end = answer(b, question)
        drafted, end = answer(b, question, mtp=True)
        assert [e["id"] for e in drafted] == [e["id"] for e in plain], question
        assert end["raw"] == plain_end["raw"] and plain_end["mtp"] is None
        counts = end["mtp"]
        # n guesses a round, none before the prefill's token; each kept guess is a token marked drafted.
        assert counts["drafted"] == b.drafter.n_guesses * (counts["forwards"] - 1)
        assert counts["accepted"] == sum(bool(e.get("drafted")) for e in drafted)
        # The drafter earns its keep: guesses are kept, so fewer forward passes than tokens.
        assert counts["accepted"] > 0 and counts["forwards"] < end["n_tokens"]
        print(
            f"gemma4 {question!r}: {end['n_tokens']} tokens in {counts['forwards']} forward passes, "
            f"{counts['accepted']}/{counts['drafted']} guesses kept "
            f"({counts['accepted'] / counts['drafted']:.2f})"
        )


def test_unload_gives_the_gpu_memory_back(family):
    # The baseline with no cuBLAS workspace and no cached free blocks: what unload() promises to return to.
    gc.collect()
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()

    b = gpu_backend(family)
    if b.drafter_id():
        b.load_drafter()
    answer(
        b, QUESTIONS[0], mtp=b.drafter is not None
    )  # matrix products: cuBLAS takes its workspace
    answer(b, QUESTIONS[0])  # and the plain path, its cache kept by the prefix cache
    weights = sum(
        p.numel() * p.element_size() for m in models_of(b).values() for p in m.parameters()
    )
    loaded, loaded_reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    assert loaded - allocated >= weights  # the weights really sit in the GPU's memory
    refs = [weakref.ref(m) for m in models_of(b).values()]

    b.unload()
    gc.collect()
    assert all(r() is None for r in refs), "something still holds a model after unload()"
    after, after_reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    print(
        f"{family}: allocated {allocated / MIB:.2f} -> {loaded / MIB:.2f} (weights {weights / MIB:.2f}) "
        f"-> {after / MIB:.2f} MiB; reserved {reserved / MIB:.2f} -> {loaded_reserved / MIB:.2f} "
        f"-> {after_reserved / MIB:.2f} MiB"
    )
    # Back to the baseline: the weights, the caches and cuBLAS's workspace (32 MiB on a Hopper) all freed...
    assert after - allocated <= MIB, (allocated, after)
    # ...and handed back to the GPU: empty_cache() frees only whole segments, which a live workspace would pin
    # (at most one 2 MiB segment of small blocks may stay).
    assert after_reserved - reserved <= 2 * MIB, (reserved, after_reserved)


def test_an_image_reaches_the_gpu_and_decodes_as_generate_does(family, request, tmp_path):
    # encode() moves the processor's tensors to the model's device, floats in its dtype: pixels in bfloat16 on the
    # GPU, token ids left as integers. Our decode loop then writes what transformers' own generate() writes from
    # the same inputs on the same device (no rounding between them), and the first token's top 5 agree.
    b = request.getfixturevalue(f"gpu_{family}")
    b.forget()
    prompt = encoded(b, saved(tmp_path, media_files.image(200, 150), "a.png"))
    assert set(prompt.media_tokens) == {"image"} and prompt.media
    for name, tensor in prompt.media.items():
        assert tensor.device.type == "cuda", name
        want = torch.bfloat16 if tensor.is_floating_point() else tensor.dtype
        assert tensor.dtype == want, name
    assert any(t.is_floating_point() for t in prompt.media.values())  # the pixels themselves
    _, ours, ref, first_top = greedy_both_ways(b, prompt)
    assert ours and [t["id"] for t in ours] == ref[: len(ours)]
    assert [t["id"] for t in ours[0]["top"]] == first_top
    b.forget()
    print(
        f"{family} image: {prompt.media_tokens} media tokens, {len(ours)} tokens as generate() writes"
    )
