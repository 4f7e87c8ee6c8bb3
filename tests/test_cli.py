"""The command line: `agentloop run` prints the loop's events, `agentloop sandbox` runs code as run_python would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from agentloop import events
from tests.conftest import TINY


def agentloop(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentloop", *args],
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


def test_run_json_prints_one_documented_event_a_line():
    out = agentloop(
        "run",
        "--json",
        "--yes",
        "--max-steps",
        "1",
        "--max-tokens",
        "8",
        "--temperature",
        "0",
        "--model",
        str(TINY["gemma4"]),
        "Hello",
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    for event in lines:
        events.check(event)
    assert [e["type"] for e in lines[:3]] == ["run_start", "step_start", "context"]
    assert (
        lines[-1]["type"] == "run_end"
        and lines[0]["family"] == "gemma4"
        and lines[0]["tools"] == ["run_python"]
    )


def test_run_prints_readably():
    out = agentloop(
        "run",
        "--max-steps",
        "1",
        "--max-tokens",
        "5",
        "--no-tools",
        "--model",
        str(TINY["qwen3_5"]),
        "Hi",
    )
    assert "-- step 1" in out.stdout and "prefill:" in out.stdout and "tools: none" in out.stdout


def test_run_with_mtp_reports_the_drafting():
    out = agentloop(
        "run",
        "--mtp",
        "--max-steps",
        "1",
        "--max-tokens",
        "12",
        "--no-tools",
        "--temperature",
        "0",
        "--model",
        str(TINY["gemma4"]),
        "Hi",
    )
    assert "forward passes:" in out.stdout and "MTP guesses kept" in out.stdout, (
        out.stdout + out.stderr
    )


def test_unknown_tool_is_refused_before_loading():
    out = agentloop("run", "--tools", "rm_rf", "Hi")
    assert out.returncode != 0 and "rm_rf" in out.stderr


def test_sandbox_command(tmp_path):
    out = agentloop(
        "sandbox",
        "--folder",
        str(tmp_path),
        "-c",
        "open('/data/x.txt', 'w').write('hi'); print(6 * 7)",
    )
    assert out.returncode == 0 and "42" in out.stdout
    assert (tmp_path / "x.txt").read_text() == "hi"


def test_run_takes_a_name_from_the_model_menu():
    """`--model tiny-gemma4` is the folder models/tiny-gemma4, as the menu and the server name it."""
    out = agentloop(
        "run",
        "--json",
        "--yes",
        "--max-steps",
        "1",
        "--max-tokens",
        "4",
        "--no-tools",
        "--model",
        "tiny-gemma4",
        "Hi",
    )
    first = json.loads(out.stdout.splitlines()[0])
    assert first["type"] == "run_start" and first["model"].endswith("tiny-gemma4"), (
        out.stdout + out.stderr
    )


def test_a_model_that_cannot_be_found_is_said_plainly(tmp_path):
    """No traceback: what was looked for, where, and what to do, in English and Chinese."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "AGENTLOOP_MODELS": str(tmp_path)}
    missing = agentloop("run", "--model", "agent-nothing", "Hi", env=env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr, missing.stderr
    assert (
        "agent-nothing" in missing.stderr
        and str(tmp_path) in missing.stderr
        and "沒有" in missing.stderr
    )
    offline = agentloop("run", "--model", "nobody/no-such-model", "Hi", env=env)
    assert offline.returncode == 2 and "Traceback" not in offline.stderr, offline.stderr
    assert "nobody/no-such-model" in offline.stderr and "Hugging Face Hub" in offline.stderr
    assert "無法" in offline.stderr
    not_a_name = agentloop("run", "--model", "../../etc", "Hi", env=env)
    assert (
        not_a_name.returncode == 2
        and "neither" in not_a_name.stderr
        and "既不是" in not_a_name.stderr
    )


def test_serve_serves_the_site_it_is_given(tmp_path):
    """`agentloop serve --site DIR`: a book built elsewhere (mkdocs build -d DIR) is the one served."""
    import time
    import uuid

    import httpx

    from demo_server.client import free_port

    site = tmp_path / "site"
    site.mkdir()
    marker = f"book-{uuid.uuid4().hex}"
    (site / "index.html").write_text(f"<html><head></head><body>{marker}</body></html>")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentloop", "serve", "--port", str(port), "--site", str(site)]
        + ["--model", str(TINY["qwen3_5"])],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline, page = time.monotonic() + 60, None
        while time.monotonic() < deadline and page is None:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
            except httpx.TransportError:
                time.sleep(0.3)
        assert page is not None and page.status_code == 200 and marker in page.text
    finally:
        server.terminate()
        server.wait(30)
