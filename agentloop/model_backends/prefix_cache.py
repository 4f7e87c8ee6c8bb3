"""Prefix reuse (chapter 8): the model's cache kept from one generate() to the next, so that a
step computes only the part of its prompt that the cache does not already hold.

It follows vLLM's automatic prefix caching in what it promises (a reused position gives exactly
what computing it again would give), but keeps one cache, the last generation's, which is what an
agent's steps need: each step's prompt is the last one's, plus the reply, plus a tool's result.
The new prompt's token ids are compared with the ids the cache holds, and everything from the
first one that differs is computed. What each kind of layer needs for that:

- Full attention layers hold one key and one value per position: they are cut back.
- Sliding-window layers (Gemma 4) attend to their last `sliding_window` positions only, and
  transformers keeps only those, so past the window the keys needed to cut back would be gone.
  Here they keep every position (transformers' "past recording", which MTP's drafting also
  needs), so they can be cut back to any position exactly. They still attend to their window
  only; the cost is the memory of a full attention layer.
- Gated DeltaNet layers (Qwen3.5) hold a fixed-size state that every position has updated: it
  cannot be cut back. A copy of it is kept where a later prompt can diverge, at the end of each
  prompt and of each reply, and a prompt restarts from the last copy inside the shared prefix
  (or from the live state, when it shares all the cache holds).

Left out: caches of other conversations (vLLM keeps blocks of many requests, found by hashing
their tokens); copies of the Gated DeltaNet state inside a reply (a prompt that diverges there
computes the reply again from its start).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer, LinearAttentionLayer

# How many copies of Gated DeltaNet's state are kept (the latest): two a step, so two steps' worth.
# One copy of a real Qwen3.5-0.8B's state is about 20 MB (18 layers of 16 heads of 128 x 128).
MAX_STATES = 4


class PrefixCache:
    def __init__(self, config):
        self.config = config
        self.enabled = True  # False: every prompt is computed whole, as without this module
        self.cache: DynamicCache | None = None  # the model's cache after the last generate()
        self.ids: list[int] = []  # the tokens whose positions the cache holds, in order
        self.states: dict[int, list] = {}  # position -> a copy of each Gated DeltaNet layer there

    def start(self, prompt_ids: list[int]) -> tuple[DynamicCache, int]:
        """A cache to compute `prompt_ids` with, and how many of its first tokens it already holds.

        The cache is taken out until hold() gives it back: a generation that ends half-way
        leaves nothing whose contents differ from the ids recorded for it."""
        cache, held = self.cache, self.ids
        self.cache, self.ids = None, []
        reused = 0
        if self.enabled and cache is not None:
            reused = self.restart_point(cache, held, prompt_ids)
        if reused == 0:
            self.states = {}
            return fresh_cache(self.config), 0
        self.rewind(cache, len(held), reused)
        return cache, reused

    def restart_point(self, cache: DynamicCache, held: list[int], prompt_ids: list[int]) -> int:
        """The longest prefix of the prompt that the cache can be put back to exactly."""
        shared = 0
        for a, b in zip(held, prompt_ids):
            if a != b:  # a template that rewrote history, or another conversation: stop here
                break
            shared += 1
        # The prompt's last token always goes through the model: its pass gives the logits.
        shared = min(shared, len(prompt_ids) - 1)
        if not is_supported(cache):
            return 0
        if not has_recurrent_state(cache):
            return shared  # attention layers can be cut back to any position
        # Gated DeltaNet's state exists where it was copied, and live where the cache ends.
        return max((p for p in [len(held), *self.states] if p <= shared), default=0)

    def rewind(self, cache: DynamicCache, held: int, n: int) -> None:
        """Put every layer of `cache`, which holds `held` positions, back to its first `n`."""
        if n != held and n in self.states:  # Gated DeltaNet: the copy made at n
            for layer, saved in zip(cache.layers, self.states[n]):
                if saved is not None:
                    restore(layer, saved)
        cut_back(cache, n)
        # Copies past n describe a history this prompt does not share.
        self.states = {p: s for p, s in self.states.items() if p <= n}

    def mark(self, cache: DynamicCache) -> None:
        """Copy Gated DeltaNet's state where the cache ends now: a later prompt may diverge here."""
        if has_recurrent_state(cache):
            self.states[cache.get_seq_length()] = [copy(layer) for layer in cache.layers]
            for position in sorted(self.states)[:-MAX_STATES]:
                del self.states[position]

    def hold(self, cache: DynamicCache, ids: list[int]) -> None:
        """Keep `cache` for the next prompt. `ids` are the prompt's and the reply's tokens. The
        cache holds the positions of all but the last (never fed back), or with MTP a few
        guesses more, which are cut off: the tokens at those positions are not known here."""
        length = cache.get_seq_length()
        if length > len(ids):
            if has_recurrent_state(cache):
                self.states = {}  # cannot be cut back: keep nothing rather than a wrong state
                return
            self.rewind(cache, length, len(ids))
            length = len(ids)
        self.cache, self.ids = cache, list(ids[:length])
        self.mark(cache)  # the end of the reply

    def drop(self) -> None:
        """Forget everything kept (a new run, a forced continuation, the model unloaded)."""
        self.cache, self.ids, self.states = None, [], {}


def fresh_cache(config) -> DynamicCache:
    """The cache the model would make for itself, but with sliding-window layers that keep every
    position, and attention layers that write a new position in place (GrowingLayer)."""
    cache = DynamicCache(config=config)
    for layer in cache.layers:
        if type(layer) in GROWING:
            layer.__class__ = GROWING[type(layer)]  # the same layer, its update() replaced
        if isinstance(layer, DynamicSlidingWindowLayer):
            layer.activate_past_recording()
    return cache


class GrowingLayer(DynamicLayer):
    """transformers' DynamicLayer, but a new position is written into a buffer with room to spare,
    instead of concatenated onto a copy of every earlier one: that copy made a token at position
    2,000 cost 1.3 times one at 100 on the tiny Gemma 4 (bench/decode.py). `keys` and `values` stay
    what transformers and cut_back() expect: views of the positions held."""

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.keys, self.values = appended(self, key_states, value_states)
        return self.keys, self.values


class GrowingSlidingWindowLayer(DynamicSlidingWindowLayer):
    """The same for a sliding-window layer that keeps every position: it is given the last
    `sliding_window - 1` positions before the new ones, as transformers gives it."""

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        assert self.record_past, "fresh_cache() makes it keep every position"
        self.cumulative_length += key_states.shape[-2]
        self.keys, self.values = appended(self, key_states, value_states)
        visible = self.sliding_window - 1 + key_states.shape[-2]
        return self.keys[:, :, -visible:, :], self.values[:, :, -visible:, :]


GROWING = {DynamicLayer: GrowingLayer, DynamicSlidingWindowLayer: GrowingSlidingWindowLayer}


def appended(layer, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's keys and values with the new ones after them, as views of its buffers. Shapes:
    [batch, heads, positions, head_dim]. A buffer is made anew, a quarter larger than needed (at
    least 256 positions more), when the new positions do not fit, or when `layer.keys` is no longer
    its start (a fresh layer)."""
    held = layer.keys.shape[-2] if layer.keys.numel() else 0
    end = held + keys.shape[-2]
    buffers = getattr(layer, "buffers", None)
    if (
        buffers is None
        or (held and layer.keys.data_ptr() != buffers[0].data_ptr())
        or end > buffers[0].shape[-2]
        or buffers[0].shape[:2] != keys.shape[:2]
    ):
        room = end + max(256, end // 4)
        buffers = tuple(t.new_empty(*t.shape[:2], room, t.shape[-1]) for t in (keys, values))
        if held:
            buffers[0][:, :, :held], buffers[1][:, :, :held] = layer.keys, layer.values
        layer.buffers = buffers
    buffers[0][:, :, held:end], buffers[1][:, :, held:end] = keys, values
    return buffers[0][:, :, :end], buffers[1][:, :, :end]


def cut_back(cache: DynamicCache, n: int) -> None:
    """Keep the first `n` positions of every attention layer (sliding-window ones too:
    fresh_cache() made them keep all of theirs)."""
    for layer in cache.layers:
        if isinstance(layer, DynamicLayer) and layer.is_initialized:
            layer.keys, layer.values = layer.keys[..., :n, :], layer.values[..., :n, :]
            if isinstance(layer, DynamicSlidingWindowLayer):
                layer.cumulative_length = n


def has_recurrent_state(cache: DynamicCache) -> bool:
    """Whether the model has Gated DeltaNet layers, whose state cannot be cut back."""
    return any(isinstance(layer, LinearAttentionLayer) for layer in cache.layers)


def is_supported(cache: DynamicCache) -> bool:
    """Whether every layer is of a kind rewind() knows (another: the prompt is computed whole)."""
    known = (*GROWING.values(), LinearAttentionLayer)
    return all(type(layer) in known for layer in cache.layers)


def copy(layer) -> dict | None:
    """A Gated DeltaNet layer's state (its convolution's last inputs, its recurrent state)."""
    if not isinstance(layer, LinearAttentionLayer):
        return None
    return {
        "conv": {i: s.clone() for i, s in layer.conv_states.items() if s is not None},
        "recurrent": {i: s.clone() for i, s in layer.recurrent_states.items() if s is not None},
        "has_previous_state": dict(layer.has_previous_state),
    }


def restore(layer, saved: dict) -> None:
    """Put a copy made by copy() back, in place (decoding updates these tensors in place)."""
    for i, s in saved["conv"].items():
        layer.conv_states[i].copy_(s)
    for i, s in saved["recurrent"].items():
        layer.recurrent_states[i].copy_(s)
    layer.has_previous_state = dict(saved["has_previous_state"])


def nbytes(prefix: PrefixCache) -> int:
    """The memory the kept cache and the state copies take."""
    tensors = [
        t
        for copies in prefix.states.values()
        for s in copies
        if s
        for t in (*s["conv"].values(), *s["recurrent"].values())
    ]
    for layer in prefix.cache.layers if prefix.cache is not None else []:
        if isinstance(layer, LinearAttentionLayer):
            states = (*layer.conv_states.values(), *layer.recurrent_states.values())
            tensors += [t for t in states if t is not None]
        elif layer.is_initialized:
            tensors += [layer.keys, layer.values]
    return sum(t.numel() * t.element_size() for t in tensors)
