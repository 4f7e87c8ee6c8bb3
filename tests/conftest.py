"""Shared fixtures: the checkpoints (the tiny ones built by `make test` before pytest runs, the trained ones
committed), the fake Hub, the book, the demo server and Chromium.

A backend comes in two ways. The session's (`tiny(family)`, `agent_qwen3_5`, `agent_gemma4`) is loaded once by
pytest and shared by every test that only reads it or runs the loop on it (a run starts from nothing: it forgets
what the last one kept). A test that changes a backend (forces its output, changes its stop tokens or generation
config, hooks its model, replaces its drafter's guesses, inspects the cache it keeps) takes one of its own:
`backend`, `own_tiny(family)` or `load(folder)`, which load in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentloop.model_families import FAMILIES
from agentloop.paths import MODELS_DIR
from agentloop.sandbox import cleanup, data_folder

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two workers (pytest-xdist) on CI's two cores. Torch would give each worker a thread a core,
    # and four threads on two cores spin against each other: a set of test_trained_models took 250 s so, and 30 s
    # with one thread a worker (one machine, 2026-12-08). The processes a test starts get one too (OMP_NUM_THREADS).
    import torch

    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"

TINY = {"qwen3_5": MODELS_DIR / "tiny-qwen3_5", "gemma4": MODELS_DIR / "tiny-gemma4"}
AGENTS = {"qwen3_5": MODELS_DIR / "agent-qwen3_5", "gemma4": MODELS_DIR / "agent-gemma4"}


def built(*folders: Path) -> None:
    """Fail, saying what builds them, unless these checkpoints of models/ are there."""
    for folder in folders:
        if not (folder / "config.json").exists():
            pytest.fail(
                f"{folder} is missing: run `make models` (tiny ones: agentloop models build-tiny; "
                "the trained ones are committed)"
            )


def load(folder: Path, **options):
    """A SimpleBackend of its own on a checkpoint of models/ (options: SimpleBackend's), on the CPU."""
    from agentloop.model_backends.simple_backend import SimpleBackend

    built(folder)
    return SimpleBackend(str(folder), device="cpu", **options)


@pytest.fixture(scope="session")
def tiny_qwen3_5():
    return load(TINY["qwen3_5"])


@pytest.fixture(scope="session")
def tiny_gemma4():
    return load(TINY["gemma4"])


@pytest.fixture(scope="session")
def agent_qwen3_5():
    return load(AGENTS["qwen3_5"])


@pytest.fixture(scope="session")
def agent_gemma4():
    return load(AGENTS["gemma4"])


@pytest.fixture
def tiny(request) -> Callable:
    """tiny(family): the session's backend on that family's tiny checkpoint, to read, never to change."""
    return lambda family: request.getfixturevalue(f"tiny_{family}")


@pytest.fixture
def own_tiny() -> Callable:
    """own_tiny(family): a backend of this test's own on that family's tiny checkpoint, free to change."""
    return lambda family: load(TINY[family])


@pytest.fixture(params=sorted(TINY))
def backend(request):
    """A tiny backend of this test's own (free to force, to change); each test that takes it runs once per
    family."""
    return load(TINY[request.param])


# A run's events, tokens left out, when the model calls a tool, the reader approves, and the model answers.
APPROVED_RUN = [
    "run_start",
    "step_start",
    "context",
    "prefill",
    "model_end",
    "tool_call",
    "permission",
    "decision",
    "tool_result",
    "step_start",
    "context",
    "prefill",
    "model_end",
    "run_end",
]


def run_harness(make: Callable, decide: Callable | None = None, on_event: Callable | None = None):
    """A harness run to its end, as a reader sees it: (its events, each checked against events.py, and the
    harness). `make(emit)` builds the harness; `decide(event)` answers each permission asked (from another
    thread, as the reader's click does; with auto-approve the harness answers itself); `on_event(harness, event)` sees each
    event as it comes (to stop the run, say)."""
    from agentloop import events

    got: list[dict] = []

    def emit(event: dict) -> None:  # `harness` is bound below, before the first event
        events.check(event)
        got.append(event)
        if event["type"] == "permission" and decide and not harness.settings.auto_approve:
            threading.Thread(target=harness.decide, args=(event["call_id"], decide(event))).start()
        if on_event:
            on_event(harness, event)

    harness = make(emit)
    harness.run()
    return got, harness


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A conversation's folder, which run_python's sandbox sees as /data, made as the server makes
    one: as root, a tmpfs with the kernel's quota (data_folder.create)."""
    f = data_folder.create(parent=tmp_path)
    yield f
    cleanup.remove_tree(f)


@pytest.fixture
def plain_folder(tmp_path: Path) -> Path:
    """A folder the reader names (`agentloop run --folder DIR`): no tmpfs, the quota is checked
    after each run."""
    f = tmp_path / "conversation"
    f.mkdir()
    return f


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
    """The book built strictly into `site` (extra environment variables for mkdocs.yml, e.g. SITE_URL), every
    edition, as `make book` builds it. Not with -q: mkdocs then drops its warnings before --strict counts them, and
    a bad page builds."""
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
        # Every edition, whatever an author's shell asks for its preview (mkdocs.yml's AGENTLOOP_EDITION).
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "AGENTLOOP_EDITION": "", **env},
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    return site


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """The book, built strictly once for the whole run: a build takes seconds, and some thirty modules serve it."""
    return build_book(tmp_path_factory.mktemp("book-built") / "site")


@pytest.fixture(scope="module")
def site(built_book, tmp_path_factory) -> Path:
    """The book in a folder of the module's own, copied from the one build (a test may change its pages)."""
    site = tmp_path_factory.mktemp("book") / "site"
    shutil.copytree(built_book, site, symlinks=True)
    return site


def chapter_url(base: str, number: str, lang: str = "en") -> str:
    """The URL of chapter `number` ("08") on a server or static host at `base`, in edition `lang` (the zh-Hant
    edition is under /zh-Hant/; a page's panels start in its edition's language, docs/assets/edition.js)."""
    chapters = Path(__file__).resolve().parent.parent / "docs" / "chapters"
    stem = english(chapters.glob(f"{number}-*.md"))[0].stem
    return f"{edition_base(base, lang)}/chapters/{stem}/"


def english(paths) -> list[Path]:
    """The English pages among `paths` (a glob of docs/): a check about the English prose reads these; the
    zh-Hant edition's pages (NAME.zh-Hant.md beside NAME.md) are held to their English page by the build
    (docs/hooks/editions_in_step.py)."""
    return sorted(p for p in paths if not p.name.endswith(".zh-Hant.md"))


def page_url(docs_path: str) -> str:
    """The site URL, from the root, of the page at `docs_path` in docs/ ("chapters/05-tools.zh-Hant.md" ->
    "zh-Hant/chapters/05-tools/", "index.md" -> "")."""
    rel = docs_path.removesuffix(".md")
    prefix = ""
    for lang in ("zh-Hant", "zh-Hans"):
        if rel.endswith(f".{lang}"):
            rel, prefix = rel.removesuffix(f".{lang}"), f"{lang}/"
    return prefix + ("" if rel == "index" else f"{rel}/")


def edition_base(base: str, lang: str) -> str:
    """The root of edition `lang` of the book at `base`."""
    return base if lang == "en" else f"{base}/{lang}"


def force_answers(page, *answers: str, sent: list | None = None) -> None:
    """Each run the page starts writes the next of `answers` as its one step (the server's testing aid,
    allow_forced; on the embedded default model, a Qwen3.5); `sent` collects each request's settings."""
    left = list(answers)

    def force(route):
        body = json.loads(route.request.post_data)
        if sent is not None:
            sent.append(body["settings"])
        route.continue_(
            post_data=json.dumps(
                {**body, "forced": [left.pop(0) + FAMILIES["qwen3_5"].stop_pieces[0]]}
            )
        )

    page.route("**/api/runs", force)


def live_panel(page, url: str, index: int = 0):
    """The `index`-th loop panel of the page at `url`, once its live form is drawn."""
    page.goto(url)
    panel = page.locator(".agentloop-panel").nth(index)
    panel.locator("button.al-run").wait_for(timeout=30000)
    return panel


def answer_each_call(turn, decide: str = "approve") -> int:
    """Click the `decide` button (approve or deny) of every call a live panel's `turn` asks about, until the turn
    ends (six minutes at most); how many were clicked."""
    buttons, end, clicked = turn.locator(f"button.al-{decide}"), turn.locator(".al-run-end"), 0
    for _ in range(720):
        if end.count():
            return clicked
        if buttons.count() > clicked:
            buttons.nth(clicked).click()
            clicked += 1
        turn.page.wait_for_timeout(500)
    raise AssertionError("the turn did not end")


@contextlib.contextmanager
def static_site(site: Path) -> Iterator[str]:
    """`site` served as a static host serves it (GitHub Pages: files only, no /api) on 127.0.0.1; its URL, as
    ServerThread's, without the last slash."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def demo_server(site_dir: Path, wait_s: float = 60, **options) -> Iterator:
    """The real demo server, `create_app(site_dir=…, **options)`, on a free port of 127.0.0.1 in this process,
    once its model has loaded (a ServerThread: `.url`, and `.app` and `.port` added). Torch runs one thread meanwhile: two
    cores are shared with other work, and a second thread only stalls on a busy core."""
    import torch

    from demo_server.app import create_app
    from demo_server.client import Client, ServerThread, free_port

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    port = free_port()
    app = create_app(site_dir=site_dir, port=port, **options)
    srv = ServerThread(app, port).start()
    srv.app, srv.port = app, port
    try:
        client = Client(srv.url)
        client.wait_ready(wait_s)
        client.close()
        yield srv
    finally:
        srv.stop()
        torch.set_num_threads(threads)


@contextlib.contextmanager
def agent_client(tmp_path_factory, **options) -> Iterator:
    """A Client of the real demo server on the embedded default model (agent-qwen3_5), for a module's
    tests: the server as demo_server() starts it, with `options` (allow_forced, say)."""
    from demo_server.client import Client

    site = tmp_path_factory.mktemp("book") / "site"
    with demo_server(
        site, wait_s=120, model=str(AGENTS["qwen3_5"]), device="cpu", **options
    ) as srv:
        client = Client(srv.url, timeout=300)
        yield client
        client.close()


CHROMIUM = "/usr/bin/chromium"
# Headless, and quiet: this machine reaches no Google service, so background networking only fails.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


def chromium_present() -> None:
    """A browser test needs Debian's Chromium; without it the test fails, saying what installs it."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (`make system` does)")


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a browser Playwright downloads), one per test module."""
    chromium_present()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
