"""The model menu: what GET /api/models offers (the checkpoints in models/ and the book's real models, each with
its family, size and a description in English and Chinese), and the model folder's examples.json. It reads
config.json and the safetensors headers only; loading is loads.py's job, and the loaded model's specs are
agentloop.model_backends.facts' (run_start carries them too).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentloop import model_families, paths
from agentloop.model_backends import model_folder

# The real models of the book, one a family, offered in the menu whether or not they are downloaded yet:
# those pinned to a revision (model_families.REVISIONS, files that never change under the book) first.
REAL_MODELS: dict[str, dict] = {
    f.real_model: {"family": f.key, "size": f.size}
    for f in sorted(
        model_families.FAMILIES.values(), key=lambda f: f.real_model not in model_families.REVISIONS
    )
}
LOCAL_PREFIXES = ("tiny-", "agent-")  # checkpoints built or trained here, in models/


def model_examples(ref: str) -> dict | None:
    """The model folder's examples.json, {"note": {en, zh}, "questions": [{kind, en, zh?, …}, …]}: what
    the live panel says of the model beside its question box, and the questions it offers (a question
    without a kind and an en is left out; other fields, such as an expected answer, pass through).
    None when the folder has none, or one that is not of that shape (the panel then offers none)."""
    path = Path(ref) / "examples.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    note = found.get("note") if isinstance(found, dict) else None
    questions = found.get("questions") if isinstance(found, dict) else None
    texts = lambda d, keys: all(isinstance(d.get(k), str) for k in keys)  # noqa: E731
    if not (isinstance(note, dict) and texts(note, ("en", "zh")) and isinstance(questions, list)):
        return None
    kept = [q for q in questions if isinstance(q, dict) and texts(q, ("kind", "en"))]
    return {"note": {"en": note["en"], "zh": note["zh"]}, "questions": kept}


def model_menu() -> list[dict]:
    """The checkpoints in models/ (tiny-*, agent-*) and the real models, each with its family, size and a
    description in English and Chinese; the default model (paths.DEFAULT_MODEL) first, marked `default: true`."""
    default = paths.DEFAULT_MODEL
    models_dir = Path(model_folder.MODELS_DIR)
    items = []
    if models_dir.is_dir():
        for folder in sorted(models_dir.iterdir()):
            config_path = folder / "config.json"
            if not folder.name.startswith(LOCAL_PREFIXES) or not config_path.is_file():
                continue
            try:
                config = json.loads(config_path.read_text())
                family = model_families.for_config(config)
            except (ValueError, OSError):  # not a model a harness can run (e.g. the MTP drafter)
                continue
            kind = "tiny" if folder.name.startswith("tiny-") else "trained"
            items.append(
                {
                    "id": folder.name,
                    "kind": kind,
                    "family": family.key,
                    "downloaded": True,
                    "bytes": _bytes(folder),
                    "parameters": model_folder.parameter_count(folder),
                    "size": None,
                    "description": _describe_local(folder, kind, family.name),
                    "default": folder.name == default,
                }
            )
    for model_id, info in REAL_MODELS.items():
        cache = models_dir / f"models--{model_id.replace('/', '--')}"
        snapshots = (
            [
                s
                for s in sorted((cache / "snapshots").glob("*"))
                if (s / "config.json").exists() and any(s.glob("*.safetensors"))
            ]
            if cache.is_dir()
            else []
        )
        items.append(
            {
                "id": model_id,
                "kind": "real",
                "family": info["family"],
                "downloaded": bool(snapshots),
                "bytes": _bytes(cache / "blobs") if snapshots else None,
                "parameters": model_folder.parameter_count(snapshots[-1]) if snapshots else None,
                "size": info["size"],
                "description": _describe_real(model_id, info, bool(snapshots)),
                "default": model_id == default,
            }
        )
    return sorted(items, key=lambda m: not m["default"])  # stable: the rest keep their order


def _describe_local(folder: Path, kind: str, family_name: str) -> dict:
    """What a checkpoint of models/ is, said plainly."""
    if kind == "tiny":
        return {
            "en": f"The real {family_name} architecture at a tiny size, with random weights: for tests. "
            f"It writes noise.",
            "zh": f"真正的 {family_name} 架構，縮成極小的尺寸，權重是隨機的：用來測試。它寫出來的只是雜訊。",
        }
    card = f"models/{folder.name}/README.md"
    return {
        "en": f"A toy: the {family_name} architecture at a tiny size, trained on this machine's CPU for the "
        f"book, to call run_python and answer with its result, and little else. See its model card "
        f"({card}).",
        "zh": f"玩具模型：{family_name} 的架構縮成極小的尺寸，在這台機器的 CPU 上為本書訓練，學會呼叫 run_python "
        f"並用它的結果回答，除此之外幾乎什麼都不會。詳見它的模型卡（{card}）。",
    }


def _describe_real(model_id: str, info: dict, downloaded: bool) -> dict:
    """A real model of the book: where it comes from, at which revision, and whether it must be downloaded."""
    family_name = model_families.FAMILIES[info["family"]].name
    revision = model_families.REVISIONS.get(model_id)
    at_en = (
        f"at the pinned revision {revision[:12]}"
        if revision
        else "at its latest revision (none is pinned)"
    )
    at_zh = f"固定在版本 {revision[:12]}" if revision else "取最新版本，沒有固定版本"
    if downloaded:
        return {
            "en": f"The real model ({family_name}, {info['size']}), from the Hugging Face Hub "
            f"{at_en}; already downloaded into models/.",
            "zh": f"真正的模型（{family_name}，{info['size']}），來自 Hugging Face Hub，{at_zh}；"
            f"已下載到 models/。",
        }
    return {
        "en": f"The real model ({family_name}, {info['size']}): picking it downloads it from the "
        f"Hugging Face Hub {at_en}, so the Hub must be reachable from this machine.",
        "zh": f"真正的模型（{family_name}，{info['size']}）：選了它就會從 Hugging Face Hub 下載"
        f"（{at_zh}），所以這台機器必須連得上 Hub。",
    }


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
