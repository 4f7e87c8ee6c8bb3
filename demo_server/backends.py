"""What runs the model for the demo server (chapter 11): transformers in this process, or a vLLM
server.

One backend serves every tab, as one model does (model.py). With VLLM_URL set, vLLM is that
server: the menu lists the models it serves and the page never starts or stops it. Without it,
picking vLLM starts a server on 127.0.0.1 from .venv-vllm (`make vllm`, vllm/local.py) for the
chosen checkpoint, and picking anything else afterwards stops that server first, so two copies of a
model never hold the memory. Left out: vLLM in Docker from the page (vllm/docker.py does it from the
command line and Python)."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from agentloop.model_backends import BACKENDS, open_backend


def vllm_installed() -> bool:
    from agentloop.model_backends.vllm.local import vllm_python

    try:
        vllm_python()
        return True
    except FileNotFoundError:
        return False


class Backends:
    def __init__(self, device: str | None = None, vllm_url: str | None = None):
        self.device = device
        self.vllm_url = vllm_url if vllm_url is not None else os.environ.get("VLLM_URL") or None
        self.server = None  # the vLLM server this page started (vllm.local.LocalServer), if any

    def open(self, kind: str, model: str, ref: str):
        """The backend `kind` on `model` (`ref`: its folder or Hub id), after stopping a vLLM this
        page started (it holds a copy of a model in memory)."""
        self.stop_started()
        if kind != "vllm":
            return open_backend(kind, ref, device=self.device)
        if self.vllm_url:  # someone else's server: use it as it is
            return open_backend("vllm", model, url=self.vllm_url)
        from agentloop.model_backends.vllm.local import LocalServer

        log = Path(tempfile.mkdtemp(prefix="agentloop-vllm-")) / "vllm.log"
        self.server = LocalServer(ref, free_port(), log)
        try:
            self.server.wait()
            return open_backend("vllm", None, url=self.server.url)
        except Exception:
            self.stop_started()
            raise

    def stop_started(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()

    def where(self, kind: str) -> str | None:
        """Where the model runs, for the status line: the vLLM server's URL, or None for this
        process."""
        if kind != "vllm":
            return None
        return self.vllm_url or (self.server.url if self.server else None)

    def offered(self, local: bool) -> list[str]:
        """The backends a menu entry can be loaded with: a model in models/ or on the Hub (`local`)
        or one the server at VLLM_URL serves."""
        if not local:
            return ["vllm"]
        if self.vllm_url or not vllm_installed():
            return ["transformers"]
        return list(BACKENDS)

    def served_menu(self) -> list[dict]:
        """The models the server at VLLM_URL serves, as menu entries (each one's config.json alone
        first)."""
        from agentloop.model_backends.vllm.menu import model_menu

        entries = []
        for m in model_menu(self.vllm_url):
            if not m["supported"]:
                continue
            entries.append(
                {
                    "id": m["id"],
                    "kind": "served",
                    "family": m["family"],
                    "downloaded": True,
                    "bytes": None,
                    "parameters": None,
                    "size": None,
                    "default": False,
                    "backends": ["vllm"],
                    "description": {
                        "en": f"Served by the vLLM server at {self.vllm_url} (from {m['root']}); "
                        f"context {m['max_model_len']} tokens.",
                        "zh": f"由 {self.vllm_url} 的 vLLM 伺服器提供（來源 {m['root']}）；"
                        f"上下文 {m['max_model_len']} 個 token。",
                    },
                }
            )
        return entries


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
