"""SimpleBackend: the model on this machine, with transformers, one token at a time.

It follows transformers' own greedy generate() exactly (a test checks token for token), but writes the loop out:
one forward pass over the prompt (prefill), then one per token with the cache, and after each the sampling
rules of sampling.py, so every token can be reported with its probability, rank and alternatives. With MTP on,
the tokens come from _drafted() instead, where a drafter (mtp.py) guesses and one pass checks several at once.
The cache is kept from one generate() to the next (prefix_cache.py), so the prefill computes
only the part of the prompt the last one did not hold. With media (chapter 7), the checkpoint's processor expands
each placeholder in encode(), the vision encoder runs before the prefill, and its output goes in their place.
The text side (render, piece, the stop tokens, the token and done events) is TextSide's (text_side.py), the same
as VLLMBackend's. Left out here: keeping a prompt with media in the prefix cache (such a prompt is prefilled whole
each step).
"""

from __future__ import annotations

import ctypes
import gc
import inspect
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from transformers import AutoModelForMultimodalLM

from agentloop.model_backends import Encoded, precision
from agentloop.model_backends.detokenize import Detokenizer
from agentloop.model_backends.media_processor import MediaProcessor
from agentloop.model_backends.model_folder import download
from agentloop.model_backends.mtp import Drafter
from agentloop.model_backends.prefix_cache import PrefixCache, cut_back, fresh_cache
from agentloop.model_backends.sampling import sample
from agentloop.model_backends.text_side import TextSide
from agentloop.model_families import Sampling

# Prompt tokens per prefill pass. A longer prompt goes through in pieces of this many, the cache carried from one to
# the next, so a pass holds the activations of 512 positions at most, whatever the prompt's length
# (bench/prefill_pieces.py measures the memory this saves at a real size).
PREFILL_PIECE = 512


def pick_device() -> str:
    """The fastest device here: a CUDA GPU, then Apple's GPU, then the CPU."""
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class SimpleBackend(TextSide):
    kind = "transformers"
    runs_ahead = False  # generation waits, between two tokens, for a run held at its pace (pace.py)

    @classmethod
    def open(cls, model: str, *, device: str | None = None, url: str | None = None):
        """The model folder or Hub id `model` on `device` (open_backend; `url` is vLLM's)."""
        return cls(model, device=device)

    def __init__(self, model_id: str, device: str | None = None, prefix_reuse: bool = True):
        # The text side first: a model no family knows is refused before its weights are loaded.
        super().__init__(Path(download(model_id)), model_id)
        self.device = device or pick_device()
        # float32 or bfloat16, by the device, its CPU's instructions and the model's size (precision.py).
        self.precision = precision.choose(self.device, self.folder)
        self.dtype = self.precision.dtype
        self.model = (
            AutoModelForMultimodalLM.from_pretrained(self.folder, dtype=self.dtype)
            .to(self.device)
            .eval()
        )
        self.parameter_count = sum(p.numel() for p in self.model.parameters())  # packing hides them
        if self.precision.packed:
            precision.pack_linears(self.model)
        self.media = MediaProcessor(self.folder, self.config, self.family, model_id)
        self.modalities, self.media_refused = self.media.reads, self.media.refused
        text_config = self.config.get("text_config", self.config)
        self.context_length = int(
            text_config.get("max_position_embeddings") or self.tokenizer.model_max_length
        )
        self._forced: deque[list[int]] = deque()
        self.drafter: Drafter | None = None  # loaded the first time MTP is switched on
        self.prefix = PrefixCache(self.model.config)  # the last generation's cache, kept
        self.prefix.enabled = prefix_reuse

    # -- text in ----------------------------------------------------------------------------------------------------

    def encode(self, prompt: str, parts: list[dict] | None = None) -> Encoded:
        """The prompt as the model reads it. Without media, the prompt's tokens (the template already wrote every
        special token, so none is added). With media (`parts`, the conversation's media in the order of their
        placeholders), the processor replaces each placeholder with the tokens that image, sound or video takes
        (media_processor.py), and makes the inputs of the encoders whose output goes there."""
        if not parts:
            ids = self.tokenizer(prompt, add_special_tokens=False).input_ids
            return Encoded(prompt, ids, len(ids))
        ids, inputs, counts = self.media.expand(prompt, parts)
        return Encoded(
            self.tokenizer.decode(ids, skip_special_tokens=False),
            ids,
            len(ids),
            dict(inputs.to(self.device, dtype=self.dtype)),
            counts,
        )

    def force(self, text: str) -> None:
        """Make the next generate() write `text` instead of sampling, while still reporting what the model thought
        of every token. For tests and for the book's "what the model thought of this answer"."""
        self._forced.append(self.tokenizer(text, add_special_tokens=False).input_ids)

    def forget(self) -> None:
        """Drop the cache kept from earlier generations: a new run starts from nothing."""
        self.prefix.drop()

    def clear_forced(self) -> None:
        """Forget the forced continuations no generate() has used (a run that ended before it reached them)."""
        self._forced.clear()

    def load_drafter(self) -> Drafter:
        """The MTP drafter, loaded the first time it is asked for."""
        if self.drafter is None:
            if self.drafter_id() is None:
                raise ValueError(
                    f"{self.family.name} has no MTP drafter in agentloop (Qwen3.5's MTP layer ships "
                    f"inside the model's weights, and transformers does not load it): switch MTP off"
                )
            self.drafter = Drafter(self.drafter_id(), self.model, self.device, self.dtype)
        return self.drafter

    # -- tokens out -------------------------------------------------------------------------------------------------

    def generate(
        self, prompt: Encoded, sampling: Sampling, should_stop: Callable[[], bool]
    ) -> Iterator[dict]:
        """Yield a prefill event, one event per token, then a done event."""
        ids = torch.tensor([prompt.ids], device=self.device)
        forced = self._forced.popleft() if self._forced else None
        drafting = sampling.mtp and forced is None
        if drafting:
            self.load_drafter()
        # Target forward passes: the prefill's gives the first token; with MTP each later one checks a round of guesses.
        mtp = {"drafted": 0, "accepted": 0, "forwards": 1} if drafting else None
        channel = "thought" if prompt.text.endswith(self.family.thought_prefix) else "content"
        generated: list[int] = []
        text = Detokenizer(self.tokenizer)
        finish = "max_new_tokens"

        # [quote:prefill]
        with torch.inference_mode():
            fresh_positions(self.model)
            start = time.perf_counter()
            encoders = self._encoded_media(prompt.media)  # before the prefill, timed apart from it
            encode_ms = round((time.perf_counter() - start) * 1000, 1)
            start = time.perf_counter()
            # The last generation's cache, back to what this prompt shares; a continuation from
            # outside (tests, the book's recordings) or a prompt with media starts from nothing.
            if forced is None and not prompt.media:
                cache, reused = self.prefix.start(prompt.ids)
            else:
                self.prefix.drop()
                cache, reused = fresh_cache(self.model.config), 0
            out = self._prefill(ids[:, reused:], cache, drafting, encoders)
            ms = round((time.perf_counter() - start) * 1000, 1)
            self.prefix.mark(cache)  # Gated DeltaNet's state at the prompt's end, copied
            timing = {"ms": ms, **({"encode_ms": encode_ms} if prompt.media else {})}
            yield {"type": "prefill", "n_tokens": len(prompt.ids), "reused": reused, **timing}
            # [/quote:prefill]

            # [quote:decode]
            decode_start = time.perf_counter()
            # A seed: each step draws from its own generator seeded with it, the same draws every run.
            rng = None if sampling.seed is None else torch.Generator().manual_seed(sampling.seed)
            tokens = (
                self._drafted(out, sampling, mtp, rng)
                if drafting
                else self._one_at_a_time(out, sampling, forced, rng)
            )
            for token_id, details in tokens:
                if token_id is None:  # an MTP round: what the drafter guessed, how much was kept
                    yield {"type": "draft", "index": len(generated), **details}
                    continue
                if should_stop():
                    finish = "user_stopped"
                    break
                generated.append(token_id)
                event, channel = self.token_event(
                    token_id, len(generated) - 1, text, channel, details
                )
                yield event
                if token_id in self.eos_ids:
                    finish = "stop_token"
                    break
                if len(generated) == sampling.max_new_tokens or (
                    forced is not None and len(generated) == len(forced)
                ):
                    break
            # [/quote:decode]
            if forced is None and not prompt.media:
                self.prefix.hold(cache, prompt.ids + generated)  # for the next step's prompt

        yield self.done_event(generated, finish, time.perf_counter() - decode_start, mtp)

    def _one_at_a_time(
        self, out, s: Sampling, forced: list[int] | None, rng: torch.Generator | None = None
    ) -> Iterator[tuple[int, dict]]:
        """Sample a token, feed it back with the cache for the next position's logits, repeat. A generator: once the
        loop above stops asking, no extra forward pass runs."""
        n = 0
        while True:
            token_id, details = sample(
                out.logits[0, -1].float().cpu(),
                s,
                self.piece,
                forced=forced[n] if forced is not None else None,
                generator=rng,
            )
            if forced is not None:
                details["forced"] = True
            yield token_id, details
            n += 1
            out = self._forward(torch.tensor([[token_id]], device=self.device), out.past_key_values)

    # [quote:drafted]
    def _drafted(
        self, out, s: Sampling, mtp: dict, rng: torch.Generator | None = None
    ) -> Iterator[tuple[int | None, dict]]:
        """MTP: the drafter guesses the next tokens, and one forward pass of the model checks them all. Each guess
        goes through sample() as its `draft`, so every token comes out as often as without a drafter; the first
        guess turned down, or a kept stop token, ends the round, and the model's own pick in its place starts the
        next. Each round is told first as (None, {guessed, kept}), which generate() sends as a `draft` event."""
        # Its sliding-window layers keep every position (prefix_cache.py): guesses can be taken back.
        cache = out.past_key_values
        token_id, details = sample(out.logits[0, -1].float().cpu(), s, self.piece, generator=rng)
        hidden = out.hidden_states[-1][:, -1:]
        while True:
            yield token_id, details
            guesses = self.drafter.guess(token_id, hidden, cache)
            out = self._forward(
                torch.tensor([[token_id, *guesses]], device=self.device),
                cache,
                keep=len(guesses) + 1,
                hidden=True,
            )
            mtp["forwards"] += 1
            mtp["drafted"] += len(guesses)
            picks, kept = [], 0  # the model's pick at each guess, up to the first it turns down
            for guess, logits in zip(guesses, out.logits[0]):
                picks.append(
                    sample(logits.float().cpu(), s, self.piece, draft=guess, generator=rng)
                )
                if picks[-1][0] != guess:
                    break
                kept += 1
                if guess in self.eos_ids:  # the step ends here: the guesses after it are never used
                    break
            yield None, {"guessed": self._guessed(guesses), "kept": kept}  # the round, drawn first
            for token_id, details in picks[:kept]:
                # Counted as each is handed on: max_new_tokens may end the step first.
                mtp["accepted"] += 1
                yield token_id, {**details, "drafted": True}
            if kept < len(picks):  # the model's own pick where it turned a guess down
                token_id, details = picks[kept]
            else:  # every guess kept: the model's pick after the last one comes with the same pass
                token_id, details = sample(
                    out.logits[0, kept].float().cpu(), s, self.piece, generator=rng
                )
            # Forget the keys and values of the guesses turned down.
            cut_back(cache, cache.get_seq_length() - (len(guesses) - kept))
            hidden = out.hidden_states[-1][
                :, kept : kept + 1
            ]  # the model's state where the next token was picked

    # [/quote:drafted]

    def _guessed(self, ids: list[int]) -> list[dict]:
        """A round's guesses as the draft event carries them: id, the vocabulary's piece, the text."""
        return [{"id": i, "piece": self.piece(i), "text": self.tokenizer.decode([i])} for i in ids]

    def _encoded_media(self, inputs: dict) -> dict:
        """Run the vision encoder over the prompt's images and videos before the prefill, as generate() does,
        and pass its output in their place. Left to the forward pass, videos fail on Gemma 4: transformers 5.22's
        Gemma4Model.forward takes num_frames_per_video but does not hand it on to the video encoder. Sound has
        no such path: Gemma 4's audio encoder runs inside the prefill's forward pass."""
        takes_encoded = "mm_encoder_outputs" in inspect.signature(self.model.forward).parameters
        if not inputs or not takes_encoded:
            return inputs
        base, encoded = self.model.base_model, {}
        for kind in ("image", "video"):
            encoder = getattr(base, f"get_{kind}_features", None)
            params = inspect.signature(encoder).parameters if encoder else {}
            args = {k: inputs[k] for k in params if k in inputs}
            if any(k.startswith("pixel_values") for k in args):
                encoded[kind] = encoder(**args, return_dict=True)
        if not encoded:
            return inputs
        # The pixels go; the rest stays, such as the grid sizes Qwen3.5's M-RoPE positions are computed from.
        kept = {k: v for k, v in inputs.items() if not k.startswith("pixel_values")}
        return {**kept, "mm_encoder_outputs": encoded}

    # [quote:prefill-pieces]
    def _prefill(self, ids: torch.Tensor, cache, hidden: bool, encoders: dict):
        """The prompt's pass, PREFILL_PIECE tokens at a time. Each piece writes its keys, values and Gated DeltaNet
        states into the cache the next piece reads, so the last piece's logits are those of one pass over the
        whole prompt (to float32's last bits), while only one piece's activations are held at a time. A prompt
        with media goes in one pass: the encoders' output takes the place of placeholders anywhere in it."""
        if encoders:
            return self._forward(ids, cache, hidden=hidden, **encoders)
        starts = range(0, ids.shape[1], PREFILL_PIECE)
        for start in starts[:-1]:  # their logits are not needed; only the cache they leave
            self._forward(ids[:, start : start + PREFILL_PIECE], cache)
        return self._forward(ids[:, starts[-1] :], cache, hidden=hidden)

    # [/quote:prefill-pieces]

    def _forward(self, ids: torch.Tensor, past, keep: int = 1, hidden: bool = False, **encoders):
        # use_cache keeps each layer's state (keys and values; Gated DeltaNet's fixed-size state), so each new token
        # needs only its own position computed; logits_to_keep: only the last positions' distributions are needed.
        # The drafter reads the model's last hidden states (`hidden`). `encoders`: the media, prefill only.
        return self.model(
            input_ids=ids,
            past_key_values=past,
            use_cache=True,
            logits_to_keep=keep,
            output_hidden_states=hidden,
            **encoders,
        )

    # -- memory ------------------------------------------------------------------------------------------------------

    def unload(self) -> None:
        """Hand the model's memory back: to the GPU's free memory on CUDA, to the operating system on the CPU."""
        if self.drafter is not None:
            self.drafter.unload()
        self.prefix.drop()
        self.model = self.drafter = None
        gc.collect()
        if self.device == "cuda":
            # cuBLAS keeps workspaces carved out of the weights' memory segment; while they live it cannot go back.
            torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.empty_cache()
        elif self.device == "cpu":
            _malloc_trim()


def _malloc_trim() -> None:
    """Ask glibc to return freed heap pages to the operating system (freed memory otherwise stays mapped)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def fresh_positions(model) -> None:
    """Qwen3.5's multimodal positions keep the last prompt's offset on the model; each prompt starts afresh."""
    if hasattr(model.model, "rope_deltas"):
        model.model.rope_deltas = None
