"""vLLM in Docker: compose/compose.yaml, started and stopped from here (chapter 11), by the demo
server's "vLLM in Docker" and by `agentloop vllm up/down`.

start() fetches the checkpoint into models/ first (and Gemma's MTP drafter when MTP is on), because
the container mounts models/ read-only as its Hugging Face cache and never downloads; then `compose
up` the service (`vllm`, or `vllm-mtp` with the speculative config), and waits until /v1/models
answers, yielding load events as it goes. A checkpoint in models/ (agent-qwen3_5) is served from its
folder under /models; a Hub id from the cache there, at the pinned revision. running() and
serving() tell what a container already up serves, so a second tab, a reload or the command line
follows it rather than start another. Compose is `docker compose` where the plugin exists, else
Debian's `docker-compose`. Left out: pulling the image ahead (compose pulls it on the first `up`)
and more than one model per machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agentloop import model_families
from agentloop.model_backends import model_folder
from agentloop.model_backends.vllm.client import ServerError, get_json
from agentloop.model_backends.vllm.context_limit import for_folder
from agentloop.paths import ROOT

COMPOSE_FILE = ROOT / "compose" / "compose.yaml"
GPU_FILE = ROOT / "compose" / "gpu.yaml"  # the GPU reservation, added where a GPU is
PROJECT = "agentloop-vllm"
DEFAULT_PORT = 8100
N_GUESSES = 3  # MTP tokens drafted per step
IN_CONTAINER = "/models"  # where compose.yaml mounts models/


def daemon_answers() -> bool:
    """Whether Docker can run a container here: a `docker` client whose daemon answers `docker
    info` (the client alone, as on a machine without a daemon, is not enough)."""
    docker = shutil.which("docker")
    if not docker:
        return False
    try:
        done = subprocess.run([docker, "info"], capture_output=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def compose() -> list[str]:
    """The compose command here: the Docker CLI plugin, else the standalone docker-compose."""
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if standalone:
        return [standalone]
    raise FileNotFoundError("Neither `docker compose` nor `docker-compose` is installed")


def models_path() -> str:
    """The full path of models/ (where model_folder downloads), which the container mounts at
    /models."""
    return str(Path(model_folder.MODELS_DIR).resolve())


def service(mtp: bool) -> str:
    return "vllm-mtp" if mtp else "vllm"


def in_container(ref: str) -> tuple[str, str]:
    """(what the container's vLLM loads, the name it serves it under) for `ref`: a folder of models/
    by its path under /models and its own name; a Hub id by itself (from the cache under /models).
    A folder elsewhere is not in the container: ValueError, said in both languages by the caller."""
    if not os.path.isdir(ref):
        return ref, ref
    folder = Path(ref).resolve()
    try:
        inside = folder.relative_to(models_path())
    except ValueError:
        raise NotInModels(ref) from None
    return f"{IN_CONTAINER}/{inside.as_posix()}", folder.name


class NotInModels(ValueError):
    def __init__(self, ref: str):
        self.en = (
            f"{ref} is not in models/, the only folder the vLLM container sees: copy it there, "
            f"or pick a model of the menu."
        )
        self.zh = f"{ref} 不在 models/ 裡，而 vLLM 容器只看得到那個資料夾：請把它複製過去，或從選單挑一個模型。"
        super().__init__(self.en)


def gpu_present() -> bool:
    """An NVIDIA GPU the container can be given (nvidia-smi answers): vLLM drafts only there, and
    compose/gpu.yaml reserves it."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def has_mtp(ref: str) -> bool:
    """Whether the model drafts with MTP: a family with a drafter checkpoint (Gemma 4), or an MTP
    layer in its own weights (Qwen3.5's config.json: mtp_num_hidden_layers)."""
    if drafter_of(ref) is not None:
        return True
    config = json.loads((Path(config_folder(ref)) / "config.json").read_text())
    return bool((config.get("text_config") or config).get("mtp_num_hidden_layers"))


def family_of(ref: str) -> model_families.Family:
    """The model's family from its config.json alone (fetched alone for a Hub id: an unsupported
    model stops before any weights come)."""
    if os.path.isdir(ref):
        return model_families.for_config(json.loads((Path(ref) / "config.json").read_text()))
    return model_folder.check_family(ref)


def drafter_of(ref: str) -> str | None:
    """Gemma 4's drafter checkpoint beside the model (its id, or its folder in models/); None for a
    family whose MTP layer is in its own weights (Qwen3.5)."""
    suffix = family_of(ref).drafter_suffix
    return None if suffix is None else ref.rstrip("/") + suffix


def speculative_config(ref: str, drafter_at: Callable[[str], str] | None = None) -> str:
    """vLLM's --speculative-config for the model's MTP (vLLM 0.32's config/speculative.py: method
    "mtp" for both): Gemma 4's drafter checkpoint (`drafter_at` says where the server finds it; by
    default as the container sees it), Qwen3.5's own layer (no model: the target's own weights)."""
    config = {"method": "mtp", "num_speculative_tokens": N_GUESSES}
    drafter = drafter_of(ref)
    if drafter is not None:
        config["model"] = (drafter_at or (lambda d: in_container(d)[0]))(drafter)
    return json.dumps(config)


def config_folder(ref: str) -> str:
    """Where the model's config.json is on this machine (a folder, or its cached snapshot)."""
    return ref if os.path.isdir(ref) else model_folder.checkpoint_files(ref)


def environment(
    ref: str, port: int = DEFAULT_PORT, mtp: bool = False, max_model_len: int | None = None
) -> dict[str, str]:
    """What compose.yaml reads: the full path of models/, the model as the container sees it, the
    name it is served under, its pinned revision, its context (None: from its config.json), the
    port, MTP's config."""
    model, served = in_container(ref)
    env = {
        **os.environ,
        "AGENTLOOP_MODELS": models_path(),
        "VLLM_MODEL": model,
        "VLLM_SERVED_NAME": served,
        "VLLM_REVISION": model_families.REVISIONS.get(ref, "main"),
        "VLLM_MAX_MODEL_LEN": str(max_model_len or for_folder(config_folder(ref))),
        "VLLM_PORT": str(port),
    }
    if mtp:
        env["VLLM_SPECULATIVE_CONFIG"] = speculative_config(ref)
    return env


def project() -> list[str]:
    """docker compose, on compose.yaml (and gpu.yaml where a GPU is), as this project (so `down`
    finds what `up` started)."""
    gpu = ["-f", str(GPU_FILE)] if gpu_present() else []
    return [*compose(), "-f", str(COMPOSE_FILE), *gpu, "-p", PROJECT]


def up_command(mtp: bool = False) -> list[str]:
    return [*project(), "--profile", "mtp" if mtp else "plain", "up", "-d", service(mtp)]


def down_command() -> list[str]:
    # Both profiles, so whichever service runs is stopped; the compile cache volume stays.
    return [*project(), "--profile", "plain", "--profile", "mtp", "down"]


def ps_command() -> list[str]:
    return [
        *project(),
        "--profile",
        "plain",
        "--profile",
        "mtp",
        "ps",
        "--services",
        "--filter",
        "status=running",
    ]


def quiet_env() -> dict[str, str]:
    """What `down` and `ps` need of the file's variables: none matter, but compose checks them all."""
    return {
        **os.environ,
        "AGENTLOOP_MODELS": models_path(),
        "VLLM_MODEL": "-",
        "VLLM_SERVED_NAME": "-",
    }


def fetch(ref: str, mtp: bool, progress=None) -> None:
    """Everything the container reads, into models/: the checkpoint, and Gemma 4's drafter when MTP
    is on (a folder of models/ is there already)."""
    model_folder.download(ref, progress=progress)
    drafter = drafter_of(ref) if mtp else None
    if drafter is not None:
        model_folder.download_drafter(drafter)


def saying(model: str, en: str, zh: str) -> dict:
    """A `loading` event that says what the start is doing (the panel's progress line)."""
    return {"type": "loading", "model": model, "what": {"en": en, "zh": zh}}


def start(
    ref: str,
    port: int = DEFAULT_PORT,
    mtp: bool = False,
    timeout_s: float = 900.0,
    run: Callable = subprocess.run,
    answers: Callable[[str], bool] | None = None,
    progress=None,
) -> Iterator[dict]:
    """Start vLLM in Docker serving `ref` (a Hub id, or a folder of models/); yield load events
    (family, loading with what it is doing, ready) as it comes up.

    `run` runs a command (subprocess.run); `answers(url)` says whether the server answers yet;
    `progress` is the download's tqdm class (loads.py's)."""
    started = time.perf_counter()
    model, served = in_container(ref)  # a folder outside models/ stops here
    family = family_of(ref)
    yield {"type": "family", "model": served, "family": family.key}
    fetch(ref, mtp, progress)
    yield saying(
        served,
        f"Starting vLLM in Docker: compose up {service(mtp)} (the first start pulls the image).",
        f"正在啟動 Docker 中的 vLLM：compose up {service(mtp)}（第一次啟動會先下載映像檔）。",
    )
    run(up_command(mtp), env=environment(ref, port, mtp), check=True)
    url = f"http://127.0.0.1:{port}"
    answers = answers or server_answers
    deadline = time.monotonic() + timeout_s
    waited = time.monotonic()
    while not answers(url):
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"vLLM in Docker did not answer at {url} within {timeout_s:.0f} s: "
                f"`docker compose -p {PROJECT} logs` says why"
            )
        time.sleep(2.0)
        s = round(time.monotonic() - waited)
        yield saying(
            served,
            f"vLLM in Docker is loading {served} and compiling for it ({s} s so far).",
            f"Docker 中的 vLLM 正在載入 {served} 並為它編譯（已 {s} 秒）。",
        )
    yield {
        "type": "ready",
        "model": served,
        "family": family.key,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }


def stop(run: Callable = subprocess.run) -> None:
    """Stop and remove the container (the models and the compile cache stay)."""
    run(down_command(), env=quiet_env(), check=True)


def running(run: Callable = subprocess.run) -> str | None:
    """The service of this project's container that runs now (`vllm` or `vllm-mtp`), or None."""
    try:
        done = run(ps_command(), env=quiet_env(), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    services = done.stdout.split() if done.returncode == 0 else []
    return next((s for s in services if s in ("vllm", "vllm-mtp")), None)


def serving(port: int = DEFAULT_PORT) -> str | None:
    """The name of the model the container on `port` serves, or None when nothing answers there."""
    try:
        data = get_json(f"http://127.0.0.1:{port}", "/v1/models", timeout_s=2.0)["data"]
    except (ServerError, KeyError, ValueError):
        return None
    return data[0]["id"] if data else None


def server_answers(url: str) -> bool:
    try:
        get_json(url, "/v1/models", timeout_s=2.0)
        return True
    except ServerError:
        return False
