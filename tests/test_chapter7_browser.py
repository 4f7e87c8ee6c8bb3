"""Chapter 7 in a real browser against the real demo server: an image attached in the loop panel becomes its
placeholder tokens in the context view; the media panel shows what a dropped file becomes in each family;
offline, both replay their recordings; a bad file is refused in both languages and the panel still runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo_server.client import Client
from tests import media_files
from tests.conftest import TINY, demo_server, edition_base, static_site


@pytest.fixture(autouse=True, scope="module")
def torchvision_present():
    media_files.require_torchvision()


ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, wait_s=120, model=str(TINY["qwen3_5"]), device="cpu") as srv:
        yield srv


def shown(img) -> bool:
    """The image has loaded (a blocked or broken one has no natural width)."""
    img.page.wait_for_function("i => i.complete", arg=img.element_handle(), timeout=10000)
    return img.evaluate("i => i.naturalWidth") > 0


def live_panel(page, server, lang: str = "en"):
    page.goto(f"{edition_base(server.url, lang)}/chapters/07-media/")
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=20000)  # live: the server answered
    return panel


def test_an_attached_image_becomes_placeholders_in_the_context(server, browser, tmp_path):
    photo = tmp_path / "photo.png"
    photo.write_bytes(media_files.image(640, 480))
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = live_panel(page, server)
    panel.locator(".al-attach input[type=file]").set_input_files(str(photo))
    thumb = panel.locator(".al-attach img.al-att-thumb")
    thumb.wait_for(timeout=10000)
    assert shown(thumb)  # the thumbnail loaded: the page's CSP lets blob: images in
    panel.locator("textarea").fill("What is in this picture?")
    panel.locator(".al-form-settings > summary").click()  # the settings are folded to one line
    panel.locator("input[name=use_tools]").uncheck()
    panel.locator("input[name=max_new_tokens]").fill("4")
    panel.locator("input[name=max_steps]").fill("1")
    panel.locator("button.al-run").click()
    panel.get_by_text("Run ended").wait_for(timeout=120000)
    assert "photo.png · image" in panel.locator(".al-asked").inner_text()  # beside the question
    assert shown(panel.locator(".al-asked img.al-att-thumb"))
    context = panel.locator("details.al-context").first
    assert '{"image":300}' in context.inner_text()  # 20 × 15 tokens of 32 × 32 pixels
    context.locator("summary").click()
    prompt = context.locator("pre.al-prompt").inner_text()
    assert prompt.count("<|image_pad|>") == 300
    assert panel.locator(".al-attach .al-att-item").count() == 0  # the control is empty again
    assert "encoders ms" in panel.locator(".al-prefill").first.inner_text()  # beside the prefill
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "chapter7-attach-live.png"))
    page.close()


def test_a_bad_file_is_refused_in_both_languages_and_the_panel_still_runs(
    server, browser, tmp_path
):
    fake = tmp_path / "movie.mp4"
    fake.write_text("not a video at all\n" * 20)
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = live_panel(page, server)
    panel.locator(".al-attach input[type=file]").set_input_files(str(fake))
    panel.locator("textarea").fill("What happens in it?")
    panel.locator("button.al-run").click()
    panel.get_by_text("is named as a video").wait_for(timeout=20000)
    assert not panel.locator("button.al-run").is_disabled()  # the reader can try again
    # The refusal carries both languages; the panel shows the reader's.
    panel = live_panel(page, server, lang="zh-Hant")
    panel.locator(".al-attach input[type=file]").set_input_files(str(fake))
    panel.locator("textarea").fill("What happens in it?")
    panel.locator("button.al-run").click()
    panel.get_by_text("的檔名是影片").wait_for(timeout=20000)
    assert Client(server.url).status()["busy"] is False
    page.close()


def test_the_media_panel_shows_each_familys_tokens_live(server, browser, tmp_path):
    sound = tmp_path / "tone.wav"
    sound.write_bytes(media_files.tone(2.0))
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(f"{server.url}/chapters/07-media/")
    media = page.locator(".agentloop-media")
    media.locator(".al-att-drop input[type=file]").wait_for(state="attached", timeout=20000)
    media.locator(".al-att-drop input[type=file]").set_input_files(str(sound))
    gemma = media.locator('.al-att-family[data-family="gemma4"]')
    gemma.locator(".al-att-run").wait_for(timeout=30000)
    assert gemma.locator(".al-att-run").inner_text().replace("\n", "") == "<|audio|>×50"
    qwen = media.locator('.al-att-family[data-family="qwen3_5"]')
    assert "no audio encoder" in qwen.inner_text()
    media.locator("canvas.al-att-wave").wait_for(timeout=10000)  # the waveform
    media.screenshot(path=str(ARTIFACTS / "chapter7-media-live.png"))
    page.close()


@pytest.fixture(scope="module")
def static(site):
    """The built book from a plain file server, as it is published: no demo server, replays only."""
    with static_site(site) as url:
        yield url


def test_offline_both_panels_replay_their_recordings(static, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(f"{static}/chapters/07-media/")
    media = page.locator(".agentloop-media")
    qwen = media.locator('.al-att-family[data-family="qwen3_5"]')
    qwen.locator(".al-att-run").wait_for(timeout=20000)
    assert qwen.locator(".al-att-run").inner_text().replace("\n", "") == "<|image_pad|>×300"
    media.locator("img.al-att-thumb").wait_for(timeout=10000)  # the sample photo, upright
    box = media.locator("img.al-att-thumb").bounding_box()
    assert box["width"] > box["height"]  # stored sideways, shown as the viewer holds it
    media.get_by_role("button", name="clip.webm · video").click()
    runs = media.locator('.al-att-family[data-family="gemma4"] .al-att-run')
    runs.nth(23).wait_for(timeout=20000)  # the clip's 24 frames, each its run of <|video|>
    assert runs.count() == 24
    media.locator("canvas.al-att-frame").first.wait_for(timeout=10000)  # frames of the clip
    ARTIFACTS.mkdir(exist_ok=True)
    media.screenshot(path=str(ARTIFACTS / "chapter7-media-replay.png"))
    page.close()


BOXED = """(e) => {
    const s = getComputedStyle(e);
    return {border: s.borderTopStyle !== 'none' && parseFloat(s.borderTopWidth) > 0,
            background: s.backgroundColor !== 'rgba(0, 0, 0, 0)' && s.backgroundColor !== 'transparent'};
}"""


def test_the_media_panels_examples_are_named_by_their_files_and_drawn_as_buttons(static, browser):
    """Issue 47: the media panel's buttons and badge had no border or background (their colours are
    variables that were defined only inside .agentloop-panel), and the examples were named by their
    recordings' ids (ch07-expand-photo): each is named by its sample file and kind, as under its preview."""
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    page.goto(f"{static}/chapters/07-media/")
    media = page.locator(".agentloop-media")
    examples = media.locator("button.al-att-example")
    examples.first.wait_for(timeout=20000)
    assert examples.all_inner_texts() == [
        "photo.jpg · image",
        "question.wav · sound",
        "clip.webm · video",
    ]
    for button in examples.all():
        assert button.evaluate(BOXED) == {"border": True, "background": True}
    assert media.locator(".al-badge").evaluate(BOXED)["border"]
    page.close()


def test_the_media_panel_speaks_the_readers_language(static, browser):
    page = browser.new_page()
    page.goto(
        f"{static}/zh-Hant/chapters/07-media/"
    )  # the zh-Hant edition's page: its panels speak Chinese
    media = page.locator(".agentloop-media")
    media.locator('.al-att-family[data-family="qwen3_5"] .al-att-run').wait_for(timeout=20000)
    text = media.inner_text()
    assert "錄好的範例" in text and "模型讀到的使用者回合" in text and "個 token" in text
    page.close()


def test_the_attach_control_follows_a_model_switch(server, browser, tmp_path):
    # Issue 47: after a switch to a model that reads sound, the control still said "this model has no audio
    # encoder" and marked a sound as a plain file. It reads what the model loaded now reads.
    sound = tmp_path / "question.wav"
    sound.write_bytes((ROOT / "docs/chapters/runs/media/question.wav").read_bytes())
    page = browser.new_page(viewport={"width": 1280, "height": 2000})
    panel = live_panel(page, server)
    cannot = panel.locator(".al-attach .al-att-cannot")
    assert "no audio encoder" in cannot.inner_text()  # tiny Qwen3.5 has none
    client = Client(server.url)
    before = client.status()["model"]
    try:
        assert client.post("/api/models/load", {"model": "tiny-gemma4"}).status_code < 300
        assert client.wait_ready(300)["media"]["refused"] == {}
        cannot.wait_for(state="hidden", timeout=30000)  # the next status ask redraws it
        panel.locator(".al-attach input[type=file]").set_input_files(str(sound))
        item = panel.locator(".al-attach .al-att-item")
        item.wait_for(timeout=10000)
        assert item.get_attribute("data-kind") == "audio"
        assert "plain file" not in item.inner_text()  # Gemma 4 reads it as sound
    finally:
        client.post("/api/models/load", {"model": before})
        client.wait_ready(300)
        client.close()
        page.close()
