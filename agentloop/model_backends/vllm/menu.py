"""What a vLLM server serves: its models (/v1/models), the one a backend is opened on, where that
model's files come from, and the menu of them for the demo server, each with its family.

Left out: starting a server (local.py, docker.py) and what it can do with a model (probe.py)."""

from __future__ import annotations

import json
from pathlib import Path

from agentloop import model_families
from agentloop.model_backends.vllm.client import ServerError, get_json


def served_models(url: str) -> list[dict]:
    """The models the server serves (/v1/models): each one's served name, where it was loaded from
    (`root`) and its context limit."""
    return get_json(url.rstrip("/"), "/v1/models")["data"]


def files_source(model_id: str | None, served: dict) -> str:
    """Where the checkpoint's files come from: the folder asked for, else where the server loaded
    the model from (`root`: a folder on this machine, or a Hub id, fetched at the revision REVISIONS
    pins)."""
    if model_id and Path(model_id).is_dir():
        return model_id
    return served.get("root") or served["id"]


def served_model(url: str, model_id: str | None) -> dict:
    """The served model asked for by served name, root or folder; the first (usually only) one if
    none is."""
    models = served_models(url)
    if not models:
        raise ServerError(
            f"The vLLM server at {url} serves no model.", f"{url} 的 vLLM 伺服器沒有提供模型。"
        )
    if model_id is None:
        return models[0]
    for m in models:
        if model_id in (m["id"], m.get("root")) or str(Path(model_id).resolve()) == m.get("root"):
            return m
    names = ", ".join(m["id"] for m in models)
    raise ServerError(
        f"The vLLM server at {url} does not serve {model_id}; it serves {names}.",
        f"{url} 的 vLLM 伺服器沒有提供 {model_id}；它提供的是 {names}。",
    )


def model_menu(url: str) -> list[dict]:
    """The menu of a server's models: each one's config.json alone first (no weights: the server has
    them), to tell its family and whether agentloop supports it, and if not why ({en, zh})."""
    from agentloop.model_backends.model_folder import check_family

    menu = []
    for m in served_models(url):
        source = m.get("root") or m["id"]
        family, why = None, None
        try:
            if Path(source).is_dir():  # a server on this machine, serving a folder
                config = json.loads((Path(source) / "config.json").read_text())
                family = model_families.for_config(config).key
            else:
                family = check_family(source).key
        except model_families.UnsupportedModel as e:
            why = {"en": f"The book cannot run it: {e}.", "zh": f"本書無法執行它：{e}。"}
        except Exception as e:  # a config.json that cannot be fetched or read from here
            why = {
                "en": f"Its config.json cannot be read from here ({type(e).__name__}), so its "
                f"family is unknown.",
                "zh": f"從這裡讀不到它的 config.json（{type(e).__name__}），所以不知道它屬於哪個家族。",
            }
        menu.append(
            {
                "id": m["id"],
                "root": source,
                "max_model_len": m.get("max_model_len"),
                "family": family,
                "supported": family is not None,
                "why": why,
            }
        )
    return menu
