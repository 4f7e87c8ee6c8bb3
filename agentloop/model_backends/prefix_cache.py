"""Prefix reuse (chapter 8): the model's cache kept from one generate() to the next, so that a step computes only
the tokens its prompt does not share with what the cache already holds.

It follows vLLM's automatic prefix caching in what it promises (a reused position gives exactly what computing it
again would give) but keeps one cache, the last generation's, as an agent's steps need: each step's prompt is the
last one's, plus the reply, plus a tool's result. The new prompt's token ids are compared with the ids the cache
holds; from the first one that differs on, everything is computed. What each kind of layer needs for that:

- Full attention layers hold one key and one value per position: they are cut back to the shared prefix.
- Sliding-window attention layers (Gemma 4) attend to their last `sliding_window` positions only, and transformers
  keeps only those, so once a prompt is longer than the window the keys needed to cut back are gone. Here they keep
  every position's keys and values (transformers' "past recording", as MTP's drafting uses for a few tokens),
  and so can be cut back to any position exactly; they still attend to their window only. The cost is the memory
  of a full attention layer.
- Gated DeltaNet layers (Qwen3.5) hold a state of a fixed size that mixes every position seen: it cannot be cut
  back. A copy of it is kept where a later prompt can diverge, at the end of each prompt and of each reply, and a
  new prompt restarts from the last copy inside the shared prefix (or from the live state, if it shares all of it).

Left out: caches of other conversations (vLLM keeps blocks of many requests, found by hashing their tokens); a
cache kept across model loads; copies of the Gated DeltaNet state inside a reply (a prompt that diverges there
recomputes the reply from its start).
"""

from __future__ import annotations

from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer, LinearAttentionLayer

# Copies of Gated DeltaNet's state kept at once (the most recent positions): two per step, so the last two steps.
# A real Qwen3.5-0.8B's state is about 20 MB (18 layers, each 16 heads of 128 x 128 floats).
MAX_STATES = 4


class PrefixCache:
    def __init__(self, config):
        self.config = config
        self.enabled = True  # False: every prompt is computed whole, as without this module
        self.cache: DynamicCache | None = None  # the model's cache after the last generate()
        self.ids: list[int] = []  # the tokens whose positions the cache holds, in order
        self.states: dict[int, list] = {}  # position -> copies of every Gated DeltaNet layer's state there

    def start(self, prompt_ids: list[int]) -> tuple[DynamicCache, int]:
        """A cache to compute `prompt_ids` with, and how many of its first tokens the cache already holds.

        Until hold() gives it back, the cache is taken out: a generation that ends half-way leaves nothing stale."""
        cache, held = self.cache, self.ids
        self.cache, self.ids = None, []
        reused = self.restart_point(cache, held, prompt_ids) if self.enabled and cache is not None else 0
        if reused == 0:
            self.states = {}
            return fresh_cache(self.config), 0
        self.rewind(cache, len(held), reused)
        return cache, reused

    def restart_point(self, cache: DynamicCache, held: list[int], prompt_ids: list[int]) -> int:
        """The longest prefix of the prompt that the cache can be put back to exactly."""
        shared = 0
        for a, b in zip(held, prompt_ids):
            if a != b:  # a template that rewrote history, or a different conversation: the reuse stops here
                break
            shared += 1
        shared = min(shared, len(prompt_ids) - 1)  # the prompt's last token goes through the model for its logits
        if not is_supported(cache):
            return 0
        if not has_recurrent_state(cache):
            return shared  # attention layers can be cut back to any position
        # Gated DeltaNet's state exists only where it was copied, and live at the end of what the cache holds.
        return max((p for p in [len(held), *self.states] if p <= shared), default=0)

    def rewind(self, cache: DynamicCache, held: int, n: int) -> None:
        """Put every layer of `cache`, which holds `held` positions, back to its first `n` positions."""
        if n != held and n in self.states:  # Gated DeltaNet's state: live at `held`, elsewhere the copy made there
            for layer, saved in zip(cache.layers, self.states[n]):
                if saved is not None:
                    restore(layer, saved)
        cut_back(cache, n)
        self.states = {p: s for p, s in self.states.items() if p <= n}  # later copies belong to another history

    def mark(self, cache: DynamicCache) -> None:
        """Copy Gated DeltaNet's state where the cache ends now (a later prompt may diverge right after it)."""
        if has_recurrent_state(cache):
            self.states[cache.get_seq_length()] = [copy(layer) for layer in cache.layers]
            for position in sorted(self.states)[:-MAX_STATES]:
                del self.states[position]

    def hold(self, cache: DynamicCache, ids: list[int]) -> None:
        """Keep `cache` for the next prompt. `ids` are the prompt's and the reply's tokens; the cache holds the
        positions of all but the last (which was never fed back), or with MTP a few guesses more, which are cut
        off: which tokens sit at those positions is not known here."""
        length = cache.get_seq_length()
        if length > len(ids):
            if has_recurrent_state(cache):
                self.states = {}  # cannot be cut back: keep nothing rather than a state past the reply
                return
            self.rewind(cache, length, len(ids))
            length = len(ids)
        self.cache, self.ids = cache, list(ids[:length])
        self.mark(cache)  # the end of the reply

    def drop(self) -> None:
        """Forget everything kept (a new run, a forced continuation, the model unloaded)."""
        self.cache, self.ids, self.states = None, [], {}


def has_recurrent_state(cache: DynamicCache) -> bool:
    """Whether the model has Gated DeltaNet layers, whose state cannot be cut back."""
    return any(isinstance(layer, LinearAttentionLayer) for layer in cache.layers)


def fresh_cache(config) -> DynamicCache:
    """The cache the model would make for itself, but whose sliding-window layers keep every position."""
    cache = DynamicCache(config=config)
    for layer in cache.layers:
        if isinstance(layer, DynamicSlidingWindowLayer):
            layer.activate_past_recording()
    return cache


def cut_back(cache: DynamicCache, n: int) -> None:
    """Keep the first `n` positions of every attention layer (sliding-window ones too: fresh_cache() made them
    keep all of theirs)."""
    for layer in cache.layers:
        if isinstance(layer, DynamicLayer) and layer.is_initialized:
            layer.keys, layer.values = layer.keys[..., :n, :], layer.values[..., :n, :]
            if isinstance(layer, DynamicSlidingWindowLayer):
                layer.cumulative_length = n


def copy(layer) -> dict | None:
    """A Gated DeltaNet layer's state (its convolution's last inputs and its recurrent state), copied."""
    if not isinstance(layer, LinearAttentionLayer):
        return None
    return {
        "conv": {i: s.clone() for i, s in layer.conv_states.items() if s is not None},
        "recurrent": {i: s.clone() for i, s in layer.recurrent_states.items() if s is not None},
        "has_previous_state": dict(layer.has_previous_state),
    }


def restore(layer, saved: dict) -> None:
    """Put a copy made by copy() back, in place: decoding updates these tensors in place."""
    for i, s in saved["conv"].items():
        layer.conv_states[i].copy_(s)
    for i, s in saved["recurrent"].items():
        layer.recurrent_states[i].copy_(s)
    layer.has_previous_state = dict(saved["has_previous_state"])


def nbytes(prefix: PrefixCache) -> int:
    """The memory the kept cache and state copies take."""
    tensors = [t for states in prefix.states.values() for s in states if s
               for t in (*s["conv"].values(), *s["recurrent"].values())]
    if prefix.cache is not None:
        for layer in prefix.cache.layers:
            if isinstance(layer, LinearAttentionLayer):
                tensors += [t for t in (*layer.conv_states.values(), *layer.recurrent_states.values()) if t is not None]
            elif layer.is_initialized:
                tensors += [layer.keys, layer.values]
    return sum(t.numel() * t.element_size() for t in tensors)


def is_supported(cache: DynamicCache) -> bool:
    """Whether every layer is of a kind rewind() knows (another kind: the prompt is computed whole)."""
    return all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer, LinearAttentionLayer) for layer in cache.layers)

