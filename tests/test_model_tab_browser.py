"""What the seed's page shows that the panels did not (issue 47, point 13), in Debian's Chromium against the real
demo server on the embedded default model (agent-qwen3_5): a run's Model tab shows the model's specs as GET
/api/status has them, what runs it, and the media kinds it refuses with why, in the reader's language; a
recording made before run_start carried them says so, or takes the server's when that model is loaded; every
live panel, not only chapter 7's, has the attach control with its line of what cannot be attached, and a file
attached in chapter 8 reaches the model; chapter 16's pi panel takes them too."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from agentloop import events
from demo_server.client import Client
from tests import media_files
from tests.conftest import chapter_url, demo_server, force_answers, live_panel, static_site

# run_start's facts of the model (events.py's optional fields, all but the question).
FACTS = [name for name in events.OPTIONAL["run_start"] if name != "question"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(autouse=True, scope="module")
def torchvision_present():
    media_files.require_torchvision()  # the model's image processor, for the attached picture


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=300, model=None, device="cpu", allow_forced=True) as srv:
        yield srv


@pytest.fixture(scope="module")
def status(server) -> dict:
    """What GET /api/status says of the loaded model: the facts the Model tab must show."""
    c = Client(server.url)
    yield c.status()
    c.close()


def ask(panel, question: str) -> None:
    """Ask in a live panel and wait for the run to end (the page forces its answer)."""
    panel.locator("textarea").fill(question)
    panel.locator("button.al-run").click()
    panel.locator(".al-run-end").wait_for(timeout=120000)


def spec_cell(tab, key: str) -> str:
    """The value of one of chapter 3's rows in a Model tab."""
    return tab.locator(f'.al-spec-table tr[data-key="{key}"] td').first.inner_text()


def test_a_live_runs_model_tab_shows_its_specs_and_what_it_refuses(server, status, browser):
    """On main the Model tab showed the model's name, family and harness and a per-step table: no specs
    (only chapter 3's stage panel had them), and nothing of what the model refuses to read."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    force_answers(page, "Hello.")
    panel = live_panel(page, chapter_url(server.url, "08"))
    ask(panel, "Say hello.")
    turn = panel.locator(".al-turn")
    turn.locator(".al-tab[data-tab=model]").click()
    tab = turn.locator(".al-pane-model")
    specs = status["specs"]
    for key in ("layers", "hidden_size", "context_length", "heads", "vocabulary"):
        assert spec_cell(tab, key) == f"{specs[key]:,}", key
    assert spec_cell(tab, "parameters") == f"{specs['parameters']:,}"
    assert spec_cell(tab, "device") == status["device"] == "cpu"
    assert spec_cell(tab, "dtype") == status["dtype"]
    assert status["precision"] == "tiny"  # and the tab says why, in the reader's language (i18n.js)
    assert spec_cell(tab, "precision").startswith(
        "a tiny model: float32 keeps its recorded runs' tokens"
    )
    assert "run_start" in tab.locator(".al-model-source").inner_text()  # the run's own facts
    assert "Run by transformers" in tab.locator(".al-model-runs").inner_text()
    reads = tab.locator(".al-model-reads").inner_text()
    assert "image" in reads and "video" in reads
    (kind, why), *_ = status["media"]["refused"].items()
    assert kind == "audio"  # Qwen3.5 has no audio encoder
    assert tab.locator(f'.al-model-refused[data-kind="{kind}"]').inner_text() == (
        f"Does not read sound: {why['en']}"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "model-tab-live.png"))
    # The reader's language: the panel draws itself again, the Model tab's words with it.
    panel.locator("select.al-lang").select_option("zh-Hant")
    # The switch draws the run again on the tab the reader had open (it went back to Steps before).
    assert turn.locator(".al-tab[data-tab=model]").get_attribute("aria-selected") == "true"
    assert turn.locator(".al-pane-model").is_visible()
    assert turn.locator(".al-tab[data-tab=model]").inner_text() == "模型"
    tab = turn.locator(".al-pane-model")
    assert tab.locator('.al-spec-table tr[data-key="layers"] th').inner_text() == "層數"
    assert spec_cell(tab, "layers") == f"{specs['layers']:,}"
    assert tab.locator(f'.al-model-refused[data-kind="{kind}"]').inner_text() == (
        f"不讀聲音：{why['zh']}"
    )
    assert "由 transformers" in tab.locator(".al-model-runs").inner_text()
    panel.screenshot(path=str(ARTIFACTS / "model-tab-live-zh.png"))
    page.close()


@contextlib.contextmanager
def static_model_tab(site, browser):
    """Chapter 8's first panel on the static book (no server), replayed whole, its Model tab open."""
    with static_site(site) as base:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        page.goto(chapter_url(base, "08"))
        panel = page.locator(".agentloop-panel").first
        panel.locator("button.al-all").click()
        panel.locator(".al-tab[data-tab=model]").click()
        yield panel.locator(".al-pane-model")
        page.close()


def test_a_replay_shows_the_facts_its_run_start_recorded(site, browser):
    """On the static book (no server), chapter 8's recording shows the model that ran it, as recorded."""
    recorded = json.loads((site / "chapters/runs/ch08.jsonl").read_text().splitlines()[0])
    with static_model_tab(site, browser) as tab:
        assert "run_start" in tab.locator(".al-model-source").inner_text()
        assert spec_cell(tab, "layers") == f"{recorded['specs']['layers']:,}"


def test_a_recording_without_the_facts_takes_the_servers_only_for_its_own_model(
    server, status, site, browser
):
    """A recording made before run_start carried the model's facts (chapter 8's, with them taken out here). Live,
    with its model loaded, its Model tab shows the server's and says whose they are; on a static page it says
    they were not recorded and where to see a model's specs, and never shows another model's as the run's."""
    path = site / "chapters/runs/ch08.jsonl"
    kept = path.read_text()
    lines = kept.splitlines()
    start = json.loads(lines[0])
    for name in FACTS:
        start.pop(name, None)
    path.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 2000})
        panel = live_panel(page, chapter_url(server.url, "08"))
        panel.locator("button.al-live-tab[data-tab=recorded]").click()
        recorded = panel.locator(".al-recorded")
        recorded.locator("button.al-all").click()
        recorded.locator(".al-tab[data-tab=model]").click()
        tab = recorded.locator(".al-pane-model")
        assert status["model"] in tab.locator(".al-model-source").inner_text()
        assert spec_cell(tab, "layers") == f"{status['specs']['layers']:,}"
        page.close()
        with static_model_tab(site, browser) as tab:
            assert "chapter 3" in tab.locator(".al-model-nofacts").inner_text()
            assert tab.locator(".al-spec-table").count() == 0
    finally:
        path.write_text(kept)


def test_every_live_panel_has_the_attach_control_and_its_line(server, status, browser):
    """On main only chapter 7's panels (data-attach="true") had the attach control and the line saying which
    kinds cannot be attached, though any live panel's question may carry files. Elsewhere it is folded to
    that line; chapter 16's pi panel takes them too."""
    why = status["media"]["refused"]["audio"]["en"]
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = live_panel(page, chapter_url(server.url, "08"))
    control = panel.locator(".al-attach")
    assert control.evaluate("e => e.open") is False  # folded: the panel is about something else
    assert why in control.locator(".al-att-cannot").inner_text()
    assert control.locator(".al-att-harness").is_hidden()
    ARTIFACTS.mkdir(exist_ok=True)
    panel.locator(".al-controls").screenshot(path=str(ARTIFACTS / "attach-folded-ch08.png"))

    page.goto(chapter_url(server.url, "16"))
    simple, pi = page.locator(".al-side-by-side").first.locator(".agentloop-panel").all()
    pi.locator("button.al-run").wait_for(timeout=30000)
    assert why in simple.locator(".al-attach .al-att-cannot").inner_text()
    assert simple.locator(".al-attach .al-att-harness").is_hidden()
    assert why in pi.locator(".al-attach .al-att-cannot").inner_text()
    # pi takes files too (issue 42): no line says otherwise, and its picker is there to use.
    assert pi.locator(".al-attach .al-att-harness").is_hidden()
    assert pi.locator(".al-attach button.al-att-pick").is_enabled()
    page.locator(".al-side-by-side").first.screenshot(path=str(ARTIFACTS / "attach-ch16.png"))
    page.close()


def test_an_image_attached_in_chapter_8_reaches_the_model(server, browser, tmp_path):
    """A live panel outside chapter 7 sends its files with the question: the run's context has the image's
    placeholder tokens."""
    photo = tmp_path / "photo.png"
    photo.write_bytes(media_files.image(96, 64))
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    force_answers(page, "A picture.")
    panel = live_panel(page, chapter_url(server.url, "08"))
    panel.locator(".al-attach input[type=file]").set_input_files(str(photo))
    panel.locator(".al-attach img.al-att-thumb").wait_for(timeout=10000)  # opened, the file in view
    assert "1 to send" in panel.locator(".al-attach summary").inner_text()
    # A language switch draws the form again, with the file still waiting.
    panel.locator("select.al-lang").select_option("zh-Hant")
    panel.locator(".al-attach summary", has_text="1 個待送出").wait_for()
    panel.locator("select.al-lang").select_option("en")
    panel.locator(".al-attach summary", has_text="1 to send").wait_for()
    ask(panel, "What is in this picture?")
    assert "photo.png · image" in panel.locator(".al-asked").inner_text()
    context = panel.locator(".al-turn details.al-context").first
    assert '{"image":' in context.inner_text()
    context.locator("summary").click()
    assert "<|image_pad|>" in context.locator("pre.al-prompt").inner_text()
    assert panel.locator(".al-attach .al-att-item").count() == 0  # sent: the control is empty again
    page.close()
