"""The tiny checkpoints: the real architectures, rebuilt byte for byte, loading like downloaded models."""

from __future__ import annotations

import filecmp
import json

from agentloop import tiny_models
from tests.conftest import TINY


def test_rebuild_is_byte_identical(tmp_path):
    tiny_models.build_all(tmp_path)
    for name in ("tiny-qwen3_5", "tiny-gemma4", "tiny-gemma4-assistant"):
        ours, fresh = TINY["qwen3_5"].parent / name, tmp_path / name
        files = sorted(p.name for p in fresh.iterdir())
        assert files == sorted(p.name for p in ours.iterdir())
        match, mismatch, errors = filecmp.cmpfiles(ours, fresh, files, shallow=False)
        assert not mismatch and not errors, (name, mismatch, errors)


def test_architectures_are_the_real_ones():
    qwen = json.loads((TINY["qwen3_5"] / "config.json").read_text())
    assert (
        qwen["architectures"] == ["Qwen3_5ForConditionalGeneration"]
        and qwen["model_type"] == "qwen3_5"
    )
    text = qwen["text_config"]
    assert text["layer_types"].count("full_attention") * 4 == len(text["layer_types"])
    assert text["linear_key_head_dim"] == text["linear_value_head_dim"] == 128
    assert "vision_config" in qwen and not (TINY["qwen3_5"] / "generation_config.json").exists()

    gemma = json.loads((TINY["gemma4"] / "config.json").read_text())
    assert gemma["architectures"] == ["Gemma4ForConditionalGeneration"]
    text = gemma["text_config"]
    assert {"sliding_attention", "full_attention"} <= set(text["layer_types"])
    assert text["num_kv_shared_layers"] > 0 and text["hidden_size_per_layer_input"] > 0
    assert "vision_config" in gemma and "audio_config" in gemma
    generation = json.loads((TINY["gemma4"] / "generation_config.json").read_text())
    assert generation["eos_token_id"] == [1, 106, 50]
    assert (generation["temperature"], generation["top_p"], generation["top_k"]) == (1.0, 0.95, 64)

    assistant = json.loads(
        (TINY["gemma4"].parent / "tiny-gemma4-assistant" / "config.json").read_text()
    )
    assert assistant["architectures"] == ["Gemma4AssistantForCausalLM"]
    assert assistant["backbone_hidden_size"] == text["hidden_size"]
    # The drafter reads the target's keys and values, so it must expect as many sets as the target writes.
    assert assistant["text_config"]["num_key_value_heads"] == text["num_key_value_heads"]


def test_stop_tokens_and_sampling_reach_the_backend(backend):
    pieces = {backend.piece(i) for i in backend.eos_ids}
    if backend.family.key == "gemma4":
        assert backend.eos_ids == {1, 106, 50} and pieces == {
            "<eos>",
            "<turn|>",
            "<|tool_response>",
        }
        assert (backend.sampling_defaults.top_p, backend.sampling_defaults.top_k) == (0.95, 64)
    else:  # no generation_config.json: the family adds <|im_end|> and the sampling
        assert "<|im_end|>" in pieces
        assert (backend.sampling_defaults.top_p, backend.sampling_defaults.top_k) == (1.0, 20)
