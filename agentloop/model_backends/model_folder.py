"""The model folder: where a model's files come from and where they are kept (MODELS_DIR, the Hugging Face cache).

A Hugging Face id is fetched with huggingface_hub at the revision model_families.REVISIONS pins, into
models/models--org--name/snapshots/<commit>/; a folder on disk is used as it is. config.json comes first and
alone, so a model whose family agentloop does not know is refused before gigabytes of weights come down.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from huggingface_hub import snapshot_download

from agentloop import model_families
from agentloop.paths import MODELS_DIR

# The kinds of file that hold weights: a server with its own copy of the model needs everything but these.
WEIGHTS = ["*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.onnx", "*.msgpack", "*.h5"]
DRAFTER_MODEL_TYPES = ("gemma4_assistant",)  # MTP drafters (mtp.py), which no family runs as a model


def download(model_id: str, only: list[str] | None = None) -> str:
    """The model's folder, after fetching the files it lacks (only those matching `only`, if given).

    snapshot_download lists the model's files on the Hub and fetches only those the cache lacks; when the Hub
    cannot be reached (connection refused or timed out, HF_HUB_OFFLINE=1, the Hub answering 5xx) it returns the
    cached snapshot, so a downloaded model still starts offline (tests/test_model_folder.py checks it)."""
    if os.path.isdir(model_id):  # a checkpoint on disk rather than a Hugging Face id
        return model_id
    check_family(model_id)
    return _snapshot(model_id, allow_patterns=only)


def download_drafter(model_id: str) -> str:
    """An MTP drafter's folder, fetched as download() fetches a model: config.json first, so that anything but a
    drafter is refused before its weights come."""
    if os.path.isdir(model_id):
        return model_id
    folder = _snapshot(model_id, allow_patterns=["config.json"])
    model_type = json.loads((Path(folder) / "config.json").read_text()).get("model_type")
    if model_type not in DRAFTER_MODEL_TYPES:
        raise model_families.UnsupportedModel(f"{model_id} is not an MTP drafter agentloop knows "
                                              f"(model_type {model_type!r}; it knows {', '.join(DRAFTER_MODEL_TYPES)})")
    return _snapshot(model_id)


def checkpoint_files(model_id: str) -> str:
    """The model's folder with everything but its weights, for a server that loads the weights itself."""
    if os.path.isdir(model_id):
        return model_id
    check_family(model_id)
    return _snapshot(model_id, ignore_patterns=WEIGHTS)


def check_family(model_id: str) -> model_families.Family:
    """Fetch config.json alone and return the model's family; raise UnsupportedModel before any weights come."""
    folder = _snapshot(model_id, allow_patterns=["config.json"])
    config = json.loads((Path(folder) / "config.json").read_text())
    return model_families.for_config(config)


def _snapshot(model_id: str, **patterns) -> str:
    # Each call names the pinned revision (or None: "main"), not the commit the config.json call resolved. With
    # "main", snapshot_download first asks the Hub for the commit, and when that fails it falls back at once to
    # the cache, or says at once that the cached snapshot is incomplete; given a commit it skips that question,
    # tries each missing file and retries for ~20 s before failing (huggingface_hub 2.4.0).
    return snapshot_download(model_id, revision=model_families.REVISIONS.get(model_id), cache_dir=MODELS_DIR,
                             **patterns)
