"""Model families: how each model writes its turns, thinking and tool calls. Switching models changes only this layer.

A family is picked by config.json's `model_type`. It knows the stop tokens its checkpoint may lack, the text that
opens the model's thinking (`thought_prefix`), which tokens switch the output between thought, tool call and reply
(`channel_switch`), how to read a tool call out of the raw output (`parse`), and the recommended sampling.
Rendering is the checkpoint's own chat template, run by the backend; the family only adds its arguments.

- `base.py`: Family, what every family provides, and the shapes a parse returns
- `gemma4.py`: Gemma 4: its turns, thought channel and tool-call notation
- `qwen3_5.py`: Qwen3.5: ChatML turns, `<think>`, tool calls in XML
- `templates/`: the chat templates the tiny checkpoints carry (byte for byte the official
  renderings)
"""

from __future__ import annotations

from agentloop.model_families.base import Family, FormatError, Parsed, Sampling, ToolCall
from agentloop.model_families.gemma4 import GEMMA4
from agentloop.model_families.qwen3_5 import QWEN3_5

# The Hub commit each real model is downloaded at, so the files never change under the book. Gemma's ids are not
# pinned yet: no commit of theirs could be checked from here (README says so).
REVISIONS: dict[str, str] = {
    "Qwen/Qwen3.5-0.8B": "2fc06364715b967f1860aea9cf38778875588b17",
}

FAMILIES: dict[str, Family] = {family.key: family for family in (GEMMA4, QWEN3_5)}
BY_MODEL_TYPE: dict[str, Family] = {
    t: family for family in FAMILIES.values() for t in family.model_types
}


class UnsupportedModel(ValueError):
    """A checkpoint whose model_type no family here knows: refused before its weights are fetched."""


def for_model_type(model_type: str | None) -> Family:
    """The family of a checkpoint, from its config.json's model_type."""
    try:
        return BY_MODEL_TYPE[model_type or ""]
    except KeyError:
        known = ", ".join(sorted(BY_MODEL_TYPE))
        raise UnsupportedModel(
            f"model_type {model_type!r} is not supported; agentloop knows {known}"
        ) from None


def for_config(config: dict) -> Family:
    return for_model_type(config.get("model_type"))


__all__ = [
    "Family",
    "FormatError",
    "Parsed",
    "Sampling",
    "ToolCall",
    "REVISIONS",
    "FAMILIES",
    "UnsupportedModel",
    "for_model_type",
    "for_config",
]
