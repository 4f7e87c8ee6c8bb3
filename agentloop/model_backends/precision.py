"""The precision a model's weights take on this machine, and why (chapter 8).

The checkpoints' files are bfloat16. A GPU computes bfloat16 natively, so there the weights stay bfloat16. On a CPU
it depends on the CPU and on the model:

- A CPU with bfloat16 instructions (AMX, or AVX512-BF16; /proc/cpuinfo's flags name them) multiplies a real-size
  model's matrices about twice as fast in bfloat16 as in float32, and holds the weights in half the memory. There
  a model of real size runs in bfloat16, each linear layer of its language model packed once by oneDNN
  (PackedLinear). The one-row product that decode runs is where packing counts: on a Zen 4 with AVX512-BF16
  (bench/precision.py), 4.7-5.6x float32's speed packed against 2.2x plain; on a Sapphire Rapids Xeon, the
  plain one-row bfloat16 product was slower than float32's (0.61 against 0.36 ms).
- A CPU without them has no bfloat16 arithmetic of its own (PyTorch converts each product), so float32.
- A tiny model (under TINY_PARAMETERS) stays float32 on every CPU: its prefill takes milliseconds either way, and
  the book's recorded runs of the toys were made in float32, whose greedy tokens bfloat16 would change.

AGENTLOOP_DTYPE=float32 or bfloat16 overrides the choice (bench/prefill.py runs a model both ways in one run),
bfloat16 packed where oneDNN can pack it (onednn_bfloat16).
Left out: float16, quantized weights, and packing on a GPU (cuBLAS needs none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from agentloop.model_backends.model_folder import parameter_count

# Below this many parameters a model is a toy: the book's tiny checkpoints have about 4 million, the smallest
# real ones (Qwen3.5-0.8B) 800 million.
TINY_PARAMETERS = 100_000_000
BFLOAT16_FLAGS = ("amx_bf16", "avx512_bf16")
# oneDNN packs a weight for an expected number of input rows; packed for a 512-token prefill it serves decode's
# one row as fast as a copy packed for one (bench/precision.py).
PACKED_FOR_ROWS = 512


@dataclass(frozen=True)
class Precision:
    dtype: torch.dtype
    why: str  # a key of WHY: the reason, which GET /api/status and the Model tab say in the reader's language
    packed: bool = False  # the language model's linear layers packed by oneDNN (PackedLinear)


# The reasons, as the server names them; the Model tab says each in the reader's language (i18n.js's
# precision.<key>, whose English is this).
WHY = {
    "gpu": "a GPU computes bfloat16 natively",
    "cpu_bfloat16": "this CPU has bfloat16 instructions (AMX or AVX512-BF16) and the model is of real size: "
    "bfloat16, its linear layers packed by oneDNN",
    "cpu_float32": "this CPU has no bfloat16 instructions (AMX or AVX512-BF16), so float32",
    "tiny": "a tiny model: float32 keeps its recorded runs' tokens, at no cost in speed",
    "asked": "AGENTLOOP_DTYPE asked for it",
}


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags as Linux lists them (none where there is no /proc/cpuinfo)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name as Linux gives it ("an unnamed CPU" where there is no /proc/cpuinfo or no name)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return "an unnamed CPU"
    names = [
        line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")
    ]
    return names[0] if names else "an unnamed CPU"


def choose(device: str, folder: Path, flags: set[str] | None = None) -> Precision:
    """The precision of a model in `folder` on `device`: the rules of the module's docstring, in order."""
    asked = os.environ.get("AGENTLOOP_DTYPE")
    if asked:
        if asked not in ("float32", "bfloat16"):
            raise ValueError(f"AGENTLOOP_DTYPE is float32 or bfloat16, not {asked!r}")
        packed = asked == "bfloat16" and device == "cpu" and onednn_bfloat16()
        return Precision(getattr(torch, asked), "asked", packed)
    if device != "cpu":
        return Precision(torch.bfloat16, "gpu")
    # A toy's reason first: it is the same on every CPU, as its recorded runs are.
    if (parameter_count(folder) or 0) < TINY_PARAMETERS:
        return Precision(torch.float32, "tiny")
    if not set(BFLOAT16_FLAGS) & (cpu_flags() if flags is None else flags):
        return Precision(torch.float32, "cpu_float32")
    return Precision(torch.bfloat16, "cpu_bfloat16", packed=onednn_bfloat16())


def onednn_bfloat16() -> bool:
    """Whether oneDNN packs and multiplies bfloat16 on this CPU: it needs AVX512 (BW, VL, DQ) or AVX-NE-CONVERT,
    and refuses to pack elsewhere, so a CPU without them (bfloat16 asked by AGENTLOOP_DTYPE) runs plain layers."""
    return torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()


class PackedLinear(torch.nn.Module):
    """A linear layer whose bfloat16 weights oneDNN reordered once into its blocked layout (as inductor's freezing
    does), multiplied by oneDNN's own kernel: the same product as torch.nn.Linear's in bfloat16, fast for one
    row as for many."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        weight = linear.weight.detach().to(torch.bfloat16)
        self.out_features, self.in_features = weight.shape
        self.register_buffer(
            "packed", torch.ops.mkldnn._reorder_linear_weight(weight, PACKED_FOR_ROWS)
        )
        self.bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).contiguous()  # oneDNN takes one matrix of rows
        y = torch.ops.mkldnn._linear_pointwise(rows, self.packed, self.bias, "none", [], "")
        return y.reshape(*x.shape[:-1], self.out_features)


def pack_linears(model: torch.nn.Module) -> int:
    """Replace every linear layer of the language model (model.get_decoder(): not the vision or audio encoders,
    which run once a medium) by a PackedLinear, one at a time, so that each plain weight is freed as its packed
    copy is made; and the lm_head too where it has weights of its own. An lm_head tied to the embedding stays as it
    is: the embedding's lookup needs the plain weight, and a packed copy beside it would hold the vocabulary's rows
    twice (0.5 GB more for Qwen3.5-0.8B). Returns how many layers were packed."""
    output, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    holders = [model.get_decoder()]
    if output is not None and output.weight is not embedding.weight:
        holders.append(model)  # only its lm_head: the decoder's are packed by then
    packed = 0
    for holder in holders:
        for module in list(holder.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, torch.nn.Linear) and (holder is not model or child is output):
                    setattr(module, name, PackedLinear(child))
                    packed += 1
    return packed
