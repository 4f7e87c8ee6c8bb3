"""What runs the model: the Backend interface every backend implements, and the shapes it passes around.

A harness needs only this: `render()` a conversation into the prompt string with the checkpoint's chat template,
`encode()` it into token ids, and `generate()` from them, which yields a `prefill` event, one `token` event per
token and a final `done` — the same events from every backend: SimpleBackend (transformers, in this process) and
VLLMBackend (a vLLM server), both a TextSide, so that the text around the model is the same on either.

- `detokenize.py`: token ids back to text, piece by piece, without splitting a character
- `facts.py`: what a loaded model is, for GET /api/status and run_start: its specs from config.json, what
  runs it, the media it reads and its recommended sampling
- `model_folder.py`: where a model's files come from (a folder, or the Hub at a pinned revision) and
  the errors said plainly
- `media_processor.py`: the checkpoint's processor: media placeholders expanded into their tokens
- `mtp.py`: the MTP drafter that guesses tokens for drafted decoding
- `precision.py`: float32 or bfloat16 for a model on this device, and why; oneDNN's packed linear layers
- `prefix_cache.py`: PrefixCache: what the last step computed, kept so the next computes only what
  is new
- `sampling.py`: how each token is picked, and the report of what the settings kept
- `text_side.py`: TextSide, what both backends read of the checkpoint but its weights: render, the
  tokens' pieces, the stop tokens, the recommended sampling, the token and done events
- `simple_backend.py`: SimpleBackend: the model under transformers, one token at a time
- `vllm/`: VLLMBackend: the same events from a vLLM server's token-level endpoints, and the server's
  HTTP, models, probes, and start here or in Docker

BACKENDS is the one registry of what can run the model: `open_backend` opens one by its name, and the CLI's
--backend choices and the demo server read it. A new backend is one file meeting Backend (its `kind` one of the
names here) and one entry, plus its chapter. Entries name their class rather than import it: importing a backend
costs what its libraries cost (transformers, torch), and only the one asked for is paid.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from agentloop.model_families import Family, Sampling


@dataclass
class Encoded:
    """A prompt as the model reads it: its text, its token ids, and for media the encoders' inputs."""

    text: str
    ids: list[int]
    n_tokens: int
    media: dict = field(default_factory=dict)
    media_tokens: dict = field(default_factory=dict)


class Backend(Protocol):
    kind: str  # its name in BACKENDS
    model_id: str
    family: Family
    context_length: int
    sampling_defaults: Sampling
    # Whether generation goes on elsewhere while the run is held between two tokens (a server):
    # then the time a held decode took is not known here (harnesses/pace.py).
    runs_ahead: bool

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        thinking: bool,
        generation_prompt: bool = True,
    ) -> str: ...

    def encode(self, prompt: str, parts: list[dict] | None = None) -> Encoded: ...

    def generate(
        self, prompt: Encoded, sampling: Sampling, should_stop: Callable[[], bool]
    ) -> Iterator[dict]: ...

    def piece(self, token_id: int) -> str: ...

    @classmethod
    def open(cls, model: str | None, *, device: str | None, url: str | None) -> Backend:
        """open_backend's way in: each backend takes what it needs of the three."""

    # Drop what generate() kept for the next prompt (a run starts from nothing).
    def forget(self) -> None: ...

    def unload(self) -> None: ...


BACKENDS = {  # name -> "module:class", imported when a model is opened with it
    "transformers": "agentloop.model_backends.simple_backend:SimpleBackend",
    "vllm": "agentloop.model_backends.vllm.backend:VLLMBackend",
}


def open_backend(
    kind: str, model: str | None, *, device: str | None = None, url: str | None = None
):
    """The backend `kind` on `model`: for transformers, a model folder or Hub id, loaded here on
    `device`; for vllm, the name of a model the server at `url` serves (None: its first). KeyError
    for a kind not in BACKENDS."""
    module, _, name = BACKENDS[kind].partition(":")
    return getattr(importlib.import_module(module), name).open(model, device=device, url=url)
