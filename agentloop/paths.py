"""Where the project keeps things on disk, and which checkpoint a model's name means.

One resolution of model names for the command line, the demo server and the evaluation: a name from the model
menu (`agent-gemma4`, `tiny-qwen3_5`) is a folder of models/, `org/name` is a Hugging Face id, and (from the
command line only) a path to a folder with a config.json is that folder. It leaves out fetching: model_folder.py
does that.
"""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The Hugging Face cache (models--org--name/...) and the tiny checkpoints; AGENTLOOP_MODELS moves it.
MODELS_DIR = Path(os.environ.get("AGENTLOOP_MODELS", ROOT / "models")).resolve()
# The model `agentloop run`, `agentloop serve` and the menu start with: a checkpoint trained here, in models/.
DEFAULT_MODEL = "agent-qwen3_5"
# A folder name in models/ (no slash, no leading dot), and a Hugging Face id (org/name).
LOCAL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


class ModelNotFound(ValueError):
    """A model name that names nothing loadable: what was looked for, where, and what to do, in both languages.
    `status` is the HTTP status the demo server answers with (404: no such checkpoint, 422: not a name)."""

    def __init__(self, status: int, en: str, zh: str):
        super().__init__(en)
        self.status, self.en, self.zh = status, en, zh


def model_ref(name: str | None, folders: bool = False) -> tuple[str, bool]:
    """(what SimpleBackend loads, whether it comes from the Hub) for a model's name; None is DEFAULT_MODEL.

    `folders` also accepts a path to a checkpoint's folder (the command line; never a request from a page)."""
    name = DEFAULT_MODEL if name is None else name
    if folders and (Path(name) / "config.json").is_file():
        return name, False
    if LOCAL_NAME.fullmatch(name) and not name.startswith("models--"):
        folder = MODELS_DIR / name
        if (folder / "config.json").is_file():
            return str(folder), False
        raise ModelNotFound(
            404,
            f"There is no checkpoint {name!r} in {MODELS_DIR}: the model menu "
            f"(GET /api/models) lists them; `make models` builds the tiny ones.",
            f"{MODELS_DIR} 中沒有 {name!r}：模型選單（GET /api/models）列出可用的模型；"
            f"`make models` 會建置極小的模型。",
        )
    if HUB_ID.fullmatch(name) and ".." not in name:
        return name, True
    raise ModelNotFound(
        422,
        f"{name!r} is neither a checkpoint in {MODELS_DIR} nor a Hugging Face id like "
        f"Qwen/Qwen3.5-0.8B" + (", nor a folder with a config.json." if folders else "."),
        f"{name!r} 既不是 {MODELS_DIR} 中的模型，也不是像 Qwen/Qwen3.5-0.8B 這樣的 Hugging Face "
        f"名稱" + ("，也不是含有 config.json 的資料夾。" if folders else "。"),
    )


def display_name(ref: str) -> str:
    """The name the menu and run_start show for a checkpoint: a folder of models/ by its own name."""
    folder = Path(ref)
    # The folder's own parent, not its target's: a checkpoint linked into models/ is one of models/.
    if folder.is_dir() and folder.absolute().parent.resolve() == MODELS_DIR.resolve():
        return folder.name
    return ref
