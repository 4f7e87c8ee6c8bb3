"""The model folder: where a model's files come from and where they are kept (MODELS_DIR, the Hugging Face cache).

A Hugging Face id is fetched with huggingface_hub at the revision model_families.REVISIONS pins, into
models/models--org--name/snapshots/<commit>/; a folder on disk is used as it is. config.json comes first and
alone, so a model whose family agentloop does not know is refused before gigabytes of weights come down.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path

from huggingface_hub import snapshot_download

from agentloop import model_families
from agentloop.paths import MODELS_DIR

# The kinds of file that hold weights: a server with its own copy of the model needs everything but these.
WEIGHTS = ["*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.onnx", "*.msgpack", "*.h5"]
# MTP drafters (mtp.py), which no family runs as a model
DRAFTER_MODEL_TYPES = ("gemma4_assistant",)


def download(model_id: str, only: list[str] | None = None, progress=None) -> str:
    """The model's folder, after fetching the files it lacks (only those matching `only`, if given).
    `progress` is a tqdm class huggingface_hub reports its progress bars through (the demo server's load stream).

    snapshot_download lists the model's files on the Hub and fetches only those the cache lacks; when the Hub
    cannot be reached (connection refused or timed out, HF_HUB_OFFLINE=1, the Hub answering 5xx) it returns the
    cached snapshot, so a downloaded model still starts offline (tests/test_model_folder.py checks it)."""
    if os.path.isdir(model_id):  # a checkpoint on disk rather than a Hugging Face id
        return model_id
    check_family(model_id)
    return _snapshot(model_id, allow_patterns=only, tqdm_class=progress)


def download_drafter(model_id: str) -> str:
    """An MTP drafter's folder, fetched as download() fetches a model: config.json first, so that anything but a
    drafter is refused before its weights come."""
    if os.path.isdir(model_id):
        return model_id
    folder = _snapshot(model_id, allow_patterns=["config.json"])
    model_type = json.loads((Path(folder) / "config.json").read_text()).get("model_type")
    if model_type not in DRAFTER_MODEL_TYPES:
        raise model_families.UnsupportedModel(
            f"{model_id} is not an MTP drafter agentloop knows "
            f"(model_type {model_type!r}; it knows {', '.join(DRAFTER_MODEL_TYPES)})"
        )
    return _snapshot(model_id)


def checkpoint_files(model_id: str) -> str:
    """The model's folder with everything but its weights, for a server that loads the weights itself."""
    if os.path.isdir(model_id):
        return model_id
    check_family(model_id)
    return _snapshot(model_id, ignore_patterns=WEIGHTS)


def parameter_count(folder: Path) -> int | None:
    """The checkpoint's parameter count from its safetensors headers alone (8 bytes of length, then JSON: each
    tensor's shape), nothing loaded; None where the folder has no readable safetensors file."""
    total, found = 0, False
    for path in Path(folder).glob("*.safetensors"):
        try:
            with open(path, "rb") as f:
                (length,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(min(length, 100_000_000)))
        except (OSError, ValueError, struct.error):
            return None
        for name, entry in header.items():
            if name != "__metadata__":
                total += math.prod(entry.get("shape", []))
        found = True
    return total if found else None


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
    return snapshot_download(
        model_id, revision=model_families.REVISIONS.get(model_id), cache_dir=MODELS_DIR, **patterns
    )


def explain(model: str, e: Exception) -> dict:
    """Why `model` could not be found, fetched or loaded, as {en, zh}: what was looked for, where, what to do."""
    if isinstance(e, model_families.UnsupportedModel):
        return {
            "en": f"{model} cannot be loaded: {e}. Its weights were not downloaded.",
            "zh": f"無法載入 {model}：agentloop 不支援這個模型類型（{e}）。權重沒有下載。",
        }
    name = type(e).__name__
    if name in ("LocalEntryNotFoundError", "IncompleteSnapshotError", "OfflineModeIsEnabled"):
        return {
            "en": f"{model} could not be downloaded: the Hugging Face Hub cannot be reached and {MODELS_DIR} "
            f"does not hold it whole ({name}: {e}). Connect to the Hub, or pick a model in models/.",
            "zh": f"無法下載 {model}：連不上 Hugging Face Hub，而 {MODELS_DIR} 裡也沒有完整的模型"
            f"（{name}: {e}）。請連上 Hub，或選 models/ 中的模型。",
        }
    if name in (
        "RepositoryNotFoundError",
        "RevisionNotFoundError",
        "EntryNotFoundError",
        "GatedRepoError",
    ):
        return {
            "en": f"{model} was not found on the Hugging Face Hub ({name}): check the id, e.g. "
            f"Qwen/Qwen3.5-0.8B, or pick a checkpoint in {MODELS_DIR}.",
            "zh": f"在 Hugging Face Hub 上找不到 {model}（{name}）：請檢查名稱（例如 Qwen/Qwen3.5-0.8B），"
            f"或選 {MODELS_DIR} 中的模型。",
        }
    return {"en": f"Loading {model} failed: {name}: {e}", "zh": f"載入 {model} 失敗：{name}: {e}"}
