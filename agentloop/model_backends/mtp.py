"""MTP drafting (chapter 10): a small drafter guesses the next few tokens, and the model checks them all in one pass.

Gemma 4's drafter (Gemma4AssistantForCausalLM, the checkpoint `<model>-assistant`) has no keys and values of its own:
each of its layers attends to the model's, those of the model's last layer of the same kind (sliding or full
attention) that computes its own. Its input for a position is the token there, embedded by the model's own table,
next to the model's last hidden state at the position before; its output is a guess for the next token and a
hidden state of the model's width, which stands in for the model's own at the next guess. All its guesses of one
round sit at the same position, so the model's keys and values never need to be extended for them.

This follows transformers' SinglePositionMultiTokenCandidateGenerator, with one difference: the drafter sees the
model's keys and values of the positions before the token it is given, never those of a guess the model turned down.
Left out: Qwen3.5's MTP layer (it ships inside the model's own weights, and transformers does not load it), and
changing the number of guesses as they are accepted (transformers' heuristic); the drafter's generation_config says
how many (num_assistant_tokens).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from agentloop.model_backends.model_folder import download_drafter


class Drafter:
    def __init__(self, model_id: str, target, device: str, dtype: torch.dtype):
        from transformers import Gemma4AssistantForCausalLM

        self.folder = Path(download_drafter(model_id))
        self.model = (
            Gemma4AssistantForCausalLM.from_pretrained(self.folder, dtype=dtype).to(device).eval()
        )
        generation = self.folder / "generation_config.json"
        self.n_guesses = (
            int(json.loads(generation.read_text()).get("num_assistant_tokens", 6))
            if generation.exists()
            else 6
        )
        # The model's own table (Gemma scales it by √width)
        self.embed = target.get_input_embeddings()
        text_config = target.config.get_text_config()
        self.kv_layers = kv_layers(text_config)
        # The last positions a sliding-window layer sees before a new one (full attention: all).
        self.window = {"sliding_attention": text_config.sliding_window - 1}

    def shared(self, cache) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """The model's keys and values, one pair per kind of attention, straight from its cache.
        A sliding-window layer's cache may hold more than its window (prefix_cache.py keeps every
        position): only the last window - 1 are given, those the model's own layer sees."""
        shared = {}
        for kind, i in self.kv_layers.items():
            seen = slice(-self.window[kind], None) if kind in self.window else slice(None)
            layer = cache.layers[i]
            shared[kind] = (layer.keys[..., seen, :], layer.values[..., seen, :])
        return shared

    def step(
        self,
        token_ids: torch.Tensor,
        hidden: torch.Tensor,
        positions: torch.Tensor,
        shared: dict,
        masks: dict | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One pass of the drafter: the tokens' embeddings beside the hidden states before them, in; its own last
        hidden state (for the logits) and its guess at the model's next hidden state (for the next step), out.
        Without masks every query sees every key given (one guess at a time: the cache holds only the past)."""
        x = torch.cat([self.embed(token_ids), hidden], dim=-1)
        masks = masks or {"full_attention": None, "sliding_attention": None}
        out = self.model.model(
            inputs_embeds=self.model.pre_projection(x),
            attention_mask=masks,
            position_ids=positions,
            shared_kv_states=shared,
            use_cache=False,
        )
        return out.last_hidden_state, self.model.post_projection(out.last_hidden_state)

    def logits(self, last: torch.Tensor) -> torch.Tensor:
        """Scores for the clusters first, then for the tokens of the best clusters only (the rest get the lowest)."""
        if self.model.masked_embedding is None:
            return self.model.lm_head(last)
        return self.model.masked_embedding(last, self.model.lm_head.weight)

    # [quote:guess]
    def guess(self, token_id: int, hidden: torch.Tensor, cache) -> list[int]:
        """n_guesses tokens to follow `token_id`, which is at the position right after the cache's last one;
        `hidden` is the model's last hidden state at the cache's last position."""
        shared = self.shared(cache)
        position = torch.tensor([[cache.get_seq_length()]], device=hidden.device)
        last = torch.tensor([[token_id]], device=hidden.device)
        guesses = []
        for _ in range(self.n_guesses):
            out, hidden = self.step(last, hidden, position, shared)
            last = self.logits(out)[:, -1:].argmax(
                -1
            )  # the drafter's own pick is always its most likely token
            guesses.append(int(last))
        return guesses

    # [/quote:guess]

    def unload(self) -> None:
        self.model = self.embed = None


def kv_layers(text_config) -> dict[str, int]:
    """For each kind of attention, the last layer that computes its own keys and values: the ones layers sharing
    keys and values read, and so the ones the drafter reads too."""
    own = text_config.layer_types[
        : text_config.num_hidden_layers - (text_config.num_kv_shared_layers or 0)
    ]
    return {kind: max(i for i, k in enumerate(own) if k == kind) for kind in set(own)}
