"""What every family provides, and the shapes a parse returns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Sampling:
    """How each token is picked (chapter 9): T <= 0 is greedy; top_k 0 is no limit; top_p 1.0 keeps everything."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 256
    mtp: bool = False
    # The draws' seed: a sampled run is then the same every time; None: fresh
    seed: int | None = None


@dataclass
class ToolCall:
    name: str
    arguments: dict


@dataclass
class FormatError:
    """A tool call the parser could not read: `message` is told to the model, `text` is what it wrote."""

    message: str
    text: str


@dataclass
class Parsed:
    """One model output, read: its thinking, its reply text, and the tool calls it asked for (or why not)."""

    thinking: str = ""
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: FormatError | None = None


@dataclass(frozen=True)
class Family:
    key: str
    name: str
    model_types: tuple[str, ...]
    # Stop tokens the family adds to those in the checkpoint's generation_config.json.
    stop_pieces: tuple[str, ...]
    # The text that, at the very end of a prompt, means the model starts out thinking.
    thought_prefix: str
    # A token with one of these pieces switches what the following tokens are.
    channel_switch: dict[str, str]
    # Recommended sampling, for a checkpoint whose generation_config.json does not say.
    sampling: Sampling
    # Where a message keeps the model's thinking, for the chat template.
    thinking_key: str = "reasoning_content"
    # The MTP drafter's checkpoint is the model's id with this added; None: no drafter of its own here.
    drafter_suffix: str | None = None
    processor_kwargs: dict = field(default_factory=dict)
    # The book's real model of the family (a Hugging Face id) and its size as the menu says it.
    real_model: str = ""
    size: str = ""
    # The tiny checkpoint of the same architecture in models/ (tiny_models.py builds it): what a
    # preview reads when it needs the family's tokenizer and processor and no weights.
    tiny: str = ""

    def channels(self, piece: str, special: bool, current: str) -> tuple[str, str]:
        """(the channel this token is drawn in, the channel of the tokens after it). A switch token is
        itself control and changes what follows; another special token is control; the rest are text
        of the current channel."""
        if piece in self.channel_switch:
            return "control", self.channel_switch[piece]
        return ("control" if special else current), current

    def template_kwargs(self, thinking: bool) -> dict:
        """Extra arguments for the chat template."""
        return {"enable_thinking": thinking}

    def parse(self, raw: str, schemas: dict[str, dict], thinking_open: bool = False) -> Parsed:
        raise NotImplementedError

    def write_call(self, name: str, args: dict) -> str:
        """A tool call as this family's model writes it, the stop token after it included: the inverse of
        parse (forced continuations in tests and recordings are written with it)."""
        raise NotImplementedError

    def write_output(self, thought: str | None, content: str, calls: list[tuple[str, dict]]) -> str:
        """What the model writes for one assistant message after the loop's prompt (its generation prompt
        included), stop token included: the inverse of parse for a whole step. `thought` None means thinking
        is off (the prompt then already holds what the family writes for it). The training data is made of it,
        since a chat template's rendering of the history is not always what the model wrote (Gemma 4's drops
        the thought and opens a new turn after a tool's result)."""
        raise NotImplementedError


def coerce(value: str, schema: dict | None):
    """A plain-text argument value as the type its JSON Schema asks for; the text itself when it does not fit,
    so that validation then names the field."""
    types = (schema or {}).get("type", "string")
    for t in types if isinstance(types, list) else [types]:
        try:
            if t == "string":
                return value
            if t == "integer":
                return int(value.strip())
            if t == "number":
                number = float(value.strip())
                return (
                    int(number)
                    if number.is_integer() and "." not in value and "e" not in value.lower()
                    else number
                )
            if t == "boolean" and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            if t == "null" and value.strip().lower() in ("null", "none", ""):
                return None
            if t in ("object", "array"):
                parsed = json.loads(value)
                if isinstance(parsed, dict if t == "object" else list):
                    return parsed
        except ValueError:
            continue
    return value


def strip_stop(raw: str, pieces: tuple[str, ...]) -> tuple[str, str | None]:
    """The output without the stop token that ended it, and that token."""
    for piece in pieces:
        if raw.endswith(piece):
            return raw[: -len(piece)], piece
    return raw, None


def collect_calls(
    parsed: Parsed, matches, read_call, schemas: dict[str, dict], closing: str, example: str
) -> Parsed:
    """Read each matched call (group 1 its body, group 2 its closing tag) into `parsed`. The first call that cannot
    be read, or is not closed, makes the whole output a format error that tells the model how to write one."""
    for match in matches:
        call = read_call(match.group(1), schemas)
        if isinstance(call, str) or not match.group(2):
            message = call if isinstance(call, str) else f"The tool call has no closing {closing}."
            parsed.error = FormatError(f"{message} {example}", match.group(0))
            parsed.tool_calls = []
            return parsed
        parsed.tool_calls.append(call)
    return parsed
