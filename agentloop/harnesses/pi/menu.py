"""pi's own models: the ones pi has credentials for, asked of pi itself (RPC get_available_models in a
private agent dir: keys in the environment count, and the reader's own pi logins only when they
opt in, command.py's LOGINS_SWITCH), and PiMenu, which
keeps the answer a while, because each ask starts a pi.

Whoever shows the menu holds a PiMenu (the demo server, one per app), so a test makes its own instead
of clearing a module's cache. Left out: running a model of pi's own (harness.py does, with
settings.pi_model)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentloop.harnesses.pi.command import pi_command, pi_env, write_agent_dir
from agentloop.harnesses.pi.rpc import PiProcess

MENU_EVERY_S = 60.0  # pi's own models are asked for at most this often: each ask starts a pi
NO_CREDENTIALS = {
    "en": "pi has no credentials on this machine: none of its providers has an API key in the "
    "server's environment (for example ANTHROPIC_API_KEY or OPENAI_API_KEY), and the logins pi "
    "keeps are read only when the server is started with --pi-logins, so pi can only ask this "
    "page's model.",
    "zh": "這台機器上的 pi 沒有任何憑證：伺服器的環境變數裡沒有任何供應商的 API 金鑰"
    "（例如 ANTHROPIC_API_KEY 或 OPENAI_API_KEY），而 pi 保存的登入資訊只有在伺服器以 "
    "--pi-logins 啟動時才會讀取，所以 pi 只能使用本頁的模型。",
}


def pi_own_models() -> dict:
    """The models pi has credentials for, asked of a pi started for it in a private agent dir.
    {"models": [{id: "provider/id", name, provider, reasoning, input, cost}], "message": {en, zh} | None}"""
    agent_dir = Path(tempfile.mkdtemp(prefix="agentloop-pi-menu-"))
    try:
        write_agent_dir(agent_dir, None, None, None)  # with the reader's logins, if opted in
        pi = PiProcess(pi_command(), agent_dir, pi_env(agent_dir, {}))
        try:
            found = pi.command("get_available_models").get("models") or []
        finally:
            pi.close()
    finally:
        shutil.rmtree(agent_dir, ignore_errors=True)
    models = [
        {
            "id": f"{m['provider']}/{m['id']}",
            "name": m.get("name") or m["id"],
            "provider": m["provider"],
            "reasoning": bool(m.get("reasoning")),
            "input": m.get("input") or ["text"],
            "cost": m.get("cost") or {},
        }
        for m in found
    ]
    return {"models": models, "message": None if models else NO_CREDENTIALS}


class PiMenu:
    """pi's own models, asked at most once every `every_s` seconds of `clock`; one ask at a time."""

    def __init__(self, every_s: float = MENU_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.every_s, self.clock = every_s, clock
        self._asked: tuple[float, dict] | None = None  # when pi was last asked, and its answer
        self._lock = threading.Lock()

    def models(self) -> dict:
        """pi_own_models(), as last asked if that was less than `every_s` seconds ago."""
        with self._lock:
            if self._asked and self.clock() - self._asked[0] < self.every_s:
                return self._asked[1]
            value = pi_own_models()
            self._asked = (self.clock(), value)
            return value
