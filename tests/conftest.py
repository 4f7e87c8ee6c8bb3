"""Shared fixtures: the tiny checkpoints (built by `make test` before pytest runs), loaded once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.paths import MODELS_DIR

TINY = {"qwen3_5": MODELS_DIR / "tiny-qwen3_5", "gemma4": MODELS_DIR / "tiny-gemma4"}
_loaded: dict = {}


def tiny_backend(family: str):
    """A SimpleBackend on the tiny checkpoint of a family, loaded once and shared (read-only use)."""
    from agentloop.model_backends.simple_backend import SimpleBackend

    if family not in _loaded:
        if not (TINY[family] / "config.json").exists():
            pytest.fail(
                f"{TINY[family]} is missing: run `make models` (agentloop models build-tiny) first"
            )
        _loaded[family] = SimpleBackend(str(TINY[family]), device="cpu")
    return _loaded[family]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A conversation's folder, which run_python's sandbox sees as /data."""
    f = tmp_path / "conversation"
    f.mkdir()
    return f


@pytest.fixture(params=sorted(TINY))
def backend(request):
    """Each test that takes `backend` runs once per family."""
    return tiny_backend(request.param)


# -- the fake Hugging Face Hub (tests/fake_hub.py) ----------------------------------------------------------------


@pytest.fixture(scope="session")
def fake_hub_repos(tmp_path_factory):
    """{repo_id: folder} the fake Hub serves: agentloop-test/tiny-qwen3_5 (and the tiny Gemmas if built), plus
    agentloop-test/tiny-unsupported, whose config.json has a model_type no family knows. Copied once per session."""
    from tests.fake_hub import prepare_repos

    return prepare_repos(tmp_path_factory.mktemp("fake-hub-repos"), MODELS_DIR)


@pytest.fixture
def fake_hub(fake_hub_repos, monkeypatch):
    """A running fake Hub, with huggingface_hub pointed at it (online, no telemetry, no progress bars).

    huggingface_hub reads HF_ENDPOINT, HF_HUB_OFFLINE and the rest into `constants` when it is imported, so the
    environment alone changes nothing in a running process: the constants are patched as well."""
    import importlib

    from huggingface_hub import constants

    from tests.fake_hub import FakeHub

    hub = FakeHub(fake_hub_repos).start()
    for name, value in {
        "HF_ENDPOINT": hub.url,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        hub.url + "/{repo_id}/resolve/{revision}/{filename}",
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    # (the module, not the tqdm class that huggingface_hub.utils exports under the same name)
    monkeypatch.setattr(
        importlib.import_module("huggingface_hub.utils.tqdm"), "HF_HUB_DISABLE_PROGRESS_BARS", True
    )
    yield hub
    hub.stop()


def build_book(site: Path, **env: str) -> Path:
    """The book built strictly into `site` (extra environment variables for mkdocs.yml, e.g. SITE_URL)."""
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "--strict", "--site-dir", str(site)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **env},
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    return site


CHROMIUM = "/usr/bin/chromium"
# Headless, and quiet: this machine reaches no Google service, so background networking only fails.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a browser Playwright downloads), one per test module."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (make system)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
