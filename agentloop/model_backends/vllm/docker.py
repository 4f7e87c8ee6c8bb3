"""vLLM in Docker: compose/compose.yaml, started and stopped from here (chapter 11).

start() fetches the checkpoint into models/ first (and Gemma's MTP drafter when MTP is on), because
the container mounts models/ read-only as its Hugging Face cache and never downloads; then `compose
up` the service (`vllm`, or `vllm-mtp` with the speculative config), and waits until /v1/models
answers, yielding load events as it goes. Compose is `docker compose` where the plugin exists, else
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
from agentloop.paths import ROOT

COMPOSE_FILE = ROOT / "compose" / "compose.yaml"
PROJECT = "agentloop-vllm"
DEFAULT_PORT = 8100
N_GUESSES = 3  # MTP tokens drafted per step


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


def speculative_config(model_id: str) -> str:
    """vLLM's --speculative-config for the model's MTP: Gemma 4's drafter checkpoint, Qwen3.5's own
    layer."""
    family = model_folder.check_family(model_id)
    config = {"method": "mtp", "num_speculative_tokens": N_GUESSES}
    if family.drafter_suffix is not None:
        config["model"] = model_id + family.drafter_suffix
    return json.dumps(config)


def environment(model_id: str, port: int = DEFAULT_PORT, mtp: bool = False) -> dict[str, str]:
    """What compose.yaml reads: the full path of models/, the model, its pinned revision, the port,
    MTP's config."""
    env = {
        **os.environ,
        "AGENTLOOP_MODELS": models_path(),
        "VLLM_MODEL": model_id,
        "VLLM_REVISION": model_families.REVISIONS.get(model_id, "main"),
        "VLLM_PORT": str(port),
    }
    if mtp:
        env["VLLM_SPECULATIVE_CONFIG"] = speculative_config(model_id)
    return env


def project() -> list[str]:
    """docker compose, on compose.yaml, as this project (so `down` finds what `up` started)."""
    return [*compose(), "-f", str(COMPOSE_FILE), "-p", PROJECT]


def up_command(mtp: bool = False) -> list[str]:
    return [*project(), "--profile", "mtp" if mtp else "plain", "up", "-d", service(mtp)]


def down_command() -> list[str]:
    # Both profiles, so whichever service runs is stopped; the compile cache volume stays.
    return [*project(), "--profile", "plain", "--profile", "mtp", "down"]


def fetch(model_id: str, mtp: bool) -> None:
    """Everything the container reads, into models/: the checkpoint, and Gemma 4's drafter when MTP
    is on."""
    model_folder.download(model_id)
    suffix = model_folder.check_family(model_id).drafter_suffix
    if mtp and suffix is not None:
        model_folder.download_drafter(model_id + suffix)


def start(
    model_id: str,
    port: int = DEFAULT_PORT,
    mtp: bool = False,
    timeout_s: float = 900.0,
    run: Callable = subprocess.run,
    answers: Callable[[str], bool] | None = None,
) -> Iterator[dict]:
    """Start vLLM in Docker serving `model_id`; yield load events (family, loading, ready) as it
    comes up.

    `run` runs a command (subprocess.run); `answers(url)` says whether the server answers yet."""
    started = time.perf_counter()
    # config.json alone: an unsupported model stops here, before any weights come.
    family = model_folder.check_family(model_id)
    yield {"type": "family", "model": model_id, "family": family.key}
    fetch(model_id, mtp)
    yield {"type": "loading", "model": model_id}
    run(up_command(mtp), env=environment(model_id, port, mtp), check=True)
    url = f"http://127.0.0.1:{port}"
    answers = answers or server_answers
    deadline = time.monotonic() + timeout_s
    while not answers(url):
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"vLLM in Docker did not answer at {url} within {timeout_s:.0f} s: "
                f"`docker compose -p {PROJECT} logs` says why"
            )
        time.sleep(2.0)
    yield {
        "type": "ready",
        "model": model_id,
        "family": family.key,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }


def stop(run: Callable = subprocess.run) -> None:
    """Stop and remove the container (the models and the compile cache stay)."""
    run(
        down_command(),
        env={**os.environ, "AGENTLOOP_MODELS": models_path(), "VLLM_MODEL": "-"},
        check=True,
    )


def server_answers(url: str) -> bool:

    try:
        get_json(url, "/v1/models", timeout_s=2.0)
        return True
    except ServerError:
        return False
