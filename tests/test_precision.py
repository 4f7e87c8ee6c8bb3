"""The precision a model runs in (agentloop/model_backends/precision.py): float32 for the toys on every CPU,
bfloat16 for a real-size model where the CPU has bfloat16 instructions, and oneDNN's packed linear layers
computing what torch.nn.Linear computes."""

from __future__ import annotations

import json
import re
import struct

import pytest
import torch
import torch.nn.functional as F

from agentloop.events import ROOT
from agentloop.model_backends import precision
from agentloop.model_backends.model_folder import parameter_count
from agentloop.paths import MODELS_DIR

# Qwen3.5-0.8B's largest tensors, as its checkpoint's header lists them: enough for the real size.
REAL_SIZE_SHAPES = {"embed_tokens": [248_320, 1024], "layers": [24 * 3, 3584, 1024]}


@pytest.fixture
def real_size_header(tmp_path):
    """A folder whose safetensors file has a real-size checkpoint's header (each tensor's dtype, shape and
    offsets) and no tensor data: choose() reads only the header, as the model menu does."""
    header, offset = {}, 0
    for name, shape in REAL_SIZE_SHAPES.items():
        size = 2 * int(torch.tensor(shape).prod())
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text)
    return tmp_path


@pytest.fixture(autouse=True)
def no_dtype_asked(monkeypatch):
    monkeypatch.delenv("AGENTLOOP_DTYPE", raising=False)


def test_a_tiny_model_stays_float32_on_every_cpu():
    folder = MODELS_DIR / "tiny-qwen3_5"
    assert parameter_count(folder) < precision.TINY_PARAMETERS
    for flags in (set(), {"avx512_bf16"}, {"amx_bf16", "amx_tile"}):
        assert precision.choose("cpu", folder, flags) == precision.Precision(torch.float32, "tiny")


def test_a_real_size_model_takes_bfloat16_where_the_cpu_has_bfloat16_instructions(real_size_header):
    assert parameter_count(real_size_header) > 500_000_000
    for flags in ({"avx512_bf16", "avx512f"}, {"amx_bf16"}):
        chosen = precision.choose("cpu", real_size_header, flags)
        assert (chosen.dtype, chosen.why) == (torch.bfloat16, "cpu_bfloat16")
        assert chosen.packed == precision.onednn_bfloat16()
    chosen = precision.choose("cpu", real_size_header, {"avx2", "fma"})
    assert (chosen.dtype, chosen.why, chosen.packed) == (torch.float32, "cpu_float32", False)
    chosen = precision.choose("cuda", real_size_header, set())
    assert (chosen.dtype, chosen.why, chosen.packed) == (torch.bfloat16, "gpu", False)
    assert set(precision.WHY) == {"gpu", "cpu_bfloat16", "cpu_float32", "tiny", "asked"}


def test_agentloop_dtype_overrides_the_choice_and_refuses_another_name(monkeypatch):
    folder = MODELS_DIR / "tiny-qwen3_5"
    monkeypatch.setenv("AGENTLOOP_DTYPE", "bfloat16")
    chosen = precision.choose("cpu", folder, set())
    assert (chosen.dtype, chosen.why) == (torch.bfloat16, "asked")
    monkeypatch.setenv("AGENTLOOP_DTYPE", "float16")
    with pytest.raises(ValueError, match="AGENTLOOP_DTYPE is float32 or bfloat16, not 'float16'"):
        precision.choose("cpu", folder, set())


def test_the_cpu_flags_come_from_proc_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16\n\nprocessor\t: 1\n")
    assert precision.cpu_flags(cpuinfo) == {"fpu", "avx512f", "avx512_bf16"}
    assert precision.cpu_flags(tmp_path / "absent") == set()


@pytest.mark.skipif(
    not precision.onednn_bfloat16(),
    reason="oneDNN packs bfloat16 only on a CPU with AVX512 (BW, VL, DQ) or AVX-NE-CONVERT, which this one lacks",
)
@pytest.mark.parametrize("rows", [1, 7, 512])
def test_a_packed_linear_layer_computes_what_the_plain_one_computes(rows):
    torch.manual_seed(0)
    linear = torch.nn.Linear(256, 384, bias=True).to(torch.bfloat16)
    x = torch.randn(
        2, rows, 256, dtype=torch.bfloat16
    )  # a batch of sequences, as a layer gets them
    with torch.inference_mode():
        want = F.linear(x, linear.weight, linear.bias)
        got = precision.PackedLinear(linear)(x)
    assert got.shape == want.shape == (2, rows, 384) and got.dtype == torch.bfloat16
    torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-2)  # bfloat16's own rounding


def test_the_backend_asked_for_bfloat16_packs_the_language_model_and_counts_the_same_parameters(
    monkeypatch,
):
    """Packed where oneDNN computes bfloat16 on this CPU; elsewhere (an AVX2 machine asked for bfloat16) the
    layers stay plain, and the model loads and reads a prompt all the same."""
    from transformers import AutoModelForMultimodalLM

    from agentloop.model_backends.simple_backend import SimpleBackend

    plain = SimpleBackend(str(MODELS_DIR / "tiny-gemma4"), device="cpu")
    monkeypatch.setenv("AGENTLOOP_DTYPE", "bfloat16")
    packed = SimpleBackend(str(MODELS_DIR / "tiny-gemma4"), device="cpu")
    assert (packed.dtype, packed.precision.why, packed.precision.packed) == (
        torch.bfloat16,
        "asked",
        precision.onednn_bfloat16(),
    )
    decoder, model = packed.model.get_decoder(), packed.model
    linear = [m for m in decoder.modules() if isinstance(m, torch.nn.Linear)]
    assert not linear if packed.precision.packed else linear
    # The encoders of media stay plain; the lm_head stays tied to the embedding.
    assert any(isinstance(m, torch.nn.Linear) for m in model.model.vision_tower.modules())
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert packed.parameter_count == plain.parameter_count
    # The packed model reads a prompt as the same checkpoint loaded in bfloat16 and left plain does.
    reference = AutoModelForMultimodalLM.from_pretrained(packed.folder, dtype=torch.bfloat16).eval()
    ids = torch.tensor(
        [packed.encode(packed.render([{"role": "user", "content": "Hi"}], None, False)).ids]
    )
    with torch.inference_mode():
        got, want = model(input_ids=ids).logits, reference(input_ids=ids).logits
    torch.testing.assert_close(
        got, want
    )  # bfloat16's tolerances: the same products, in another layout


def test_the_model_tab_says_each_reason_in_english_as_the_code_does_and_in_chinese():
    strings = (ROOT / "docs" / "assets" / "i18n.js").read_text()
    for key, english in precision.WHY.items():
        entry = re.search(
            rf'"precision\.{key}": \{{\s*en: "([^"]+)",\s*"zh-Hant": "([^"]+)"', strings
        )
        assert entry, key
        assert entry[1] == english and entry[2]
