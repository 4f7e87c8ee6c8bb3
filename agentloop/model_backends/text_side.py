"""TextSide: the part of a model both backends keep on this machine, read from the checkpoint's files but its
weights.

config.json picks the family, the tokenizer and its chat template write and spell the tokens, and
generation_config.json gives the stop tokens and the recommended sampling. SimpleBackend and VLLMBackend are both
TextSides, so a conversation renders to the same prompt on either, the same tokens stop it, and a token makes the
same `token` event and an answer the same `done` event. Left out: encode(), which each backend does its own way
once media come in (processor here, server there), and everything the weights do.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import AutoTokenizer

from agentloop import model_families
from agentloop.model_backends.detokenize import Detokenizer
from agentloop.model_families import Family, Sampling


def generation_config(folder: Path) -> dict:
    """The checkpoint's generation_config.json ({} when it has none)."""
    path = folder / "generation_config.json"
    return json.loads(path.read_text()) if path.exists() else {}


def stop_ids(tokenizer, family: Family, generation: dict, text_config: dict) -> set[int]:
    """generation_config.json's stop tokens (else config.json's), and those the family adds."""
    eos = generation.get("eos_token_id", text_config.get("eos_token_id"))
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    for piece in family.stop_pieces:
        token_id = tokenizer.convert_tokens_to_ids(piece)
        if token_id is not None and token_id != tokenizer.unk_token_id:
            ids.add(token_id)
    return ids


def recommended_sampling(family: Family, generation: dict) -> Sampling:
    """The checkpoint's recommended settings; the family's where generation_config.json has none.
    `do_sample: false` recommends greedy decoding (temperature 0), as transformers reads it."""
    defaults = family.sampling
    greedy = generation.get("do_sample") is False
    return Sampling(
        temperature=0.0 if greedy else generation.get("temperature", defaults.temperature),
        top_p=generation.get("top_p", defaults.top_p),
        top_k=generation.get("top_k", defaults.top_k),
    )


class TextSide:
    """One checkpoint's text side: what SimpleBackend and VLLMBackend both are."""

    def __init__(self, folder: Path, model_id: str):
        """Read the text side of the checkpoint in `folder`, known as `model_id`: the family first, so a model
        no family knows is refused before anything is loaded, then the tokenizer, the stop tokens and the
        recommended sampling."""
        self.folder = folder
        self.model_id = model_id
        self.config = json.loads((folder / "config.json").read_text())
        self.family = model_families.for_config(self.config)  # refuses a model no family knows
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self._pieces = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        self.special_ids = set(self.tokenizer.added_tokens_decoder)
        generation = generation_config(folder)
        text_config = self.config.get("text_config", self.config)
        self.eos_ids = stop_ids(self.tokenizer, self.family, generation, text_config)
        self.sampling_defaults = recommended_sampling(self.family, generation)

    # -- text in ----------------------------------------------------------------------------------------------------

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        thinking: bool,
        generation_prompt: bool = True,
    ) -> str:
        """The conversation as one string, written by the checkpoint's own chat template."""
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            tokenize=False,
            add_generation_prompt=generation_prompt,
            **self.family.template_kwargs(thinking),
        )

    def piece(self, token_id: int) -> str:
        """The token as the vocabulary spells it (Ġ for a space in Qwen's, ▁ in Gemma's, <0xE4> for a byte)."""
        return self._pieces[token_id] if 0 <= token_id < len(self._pieces) else f"<{token_id}>"

    def drafter_id(self) -> str | None:
        """The MTP drafter's checkpoint, beside the model's (Gemma 4: `<model>-assistant`); None: the family has none."""
        suffix = self.family.drafter_suffix
        return None if suffix is None else self.model_id + suffix

    # -- tokens out -------------------------------------------------------------------------------------------------

    def token_event(
        self, token_id: int, index: int, text: Detokenizer, channel: str, details: dict
    ) -> tuple[dict, str]:
        """The `token` event of the answer's `index`-th token, with what sampling reported of it (`details`),
        and the channel the next token is in: the family's `channels` follows its switch tokens."""
        piece = self.piece(token_id)
        special = token_id in self.special_ids
        token_channel, channel = self.family.channels(piece, special, channel)
        event = {
            "type": "token",
            "index": index,
            "id": token_id,
            "piece": piece,
            "text": text.add(token_id),
            "special": special,
            "channel": token_channel,
            **details,
        }
        return event, channel

    def done_event(
        self, generated: list[int], finish: str, decode_s: float, mtp: dict | None
    ) -> dict:
        """The step's last event: why it ended, the stop token if one ended it, how many tokens in how long, and
        the whole output decoded with its special tokens kept, for the family's parser."""
        return {
            "type": "done",
            "finish": finish,
            "stop_piece": self.piece(generated[-1]) if finish == "stop_token" else None,
            "n_tokens": len(generated),
            "decode_ms": round(decode_s * 1000, 1),
            "tok_per_s": round(len(generated) / decode_s, 1)
            if decode_s > 0 and generated
            else None,
            "mtp": mtp,
            "raw": self.tokenizer.decode(generated, skip_special_tokens=False),
        }
