"""Gemma 4: <|turn>role … <turn|> turns, thinking in <|channel>thought … <channel|>, tool calls in Gemma's notation.

    <|turn>model
    <|channel>thought
    …reasoning…<channel|><|tool_call>call:run_python{code:<|"|>print(2 ** 64)<|"|>}<tool_call|><|tool_response>

A call's arguments are written like JSON with bare keys, strings between <|"|> marks, and numbers, booleans and
null bare, so they arrive typed. The model sometimes leaves the marks off a string (location:Tokyo); like vLLM's
and SGLang's Gemma 4 parsers, a bare value that is not a number, boolean or null is read as a string. The stop token says which way the turn went: <turn|> after an answer,
<|tool_response> when the model waits for a tool's result, which then goes into the same model turn.
"""

from __future__ import annotations

import json
import re

from agentloop.model_families.base import (
    Family,
    Parsed,
    Sampling,
    ToolCall,
    collect_calls,
    strip_stop,
)

QUOTE = '<|"|>'
CALL = re.compile(r"<\|tool_call>(.*?)(<tool_call\|>|$)", re.S)
THOUGHT = re.compile(r"<\|channel>thought\n?(.*?)(<channel\|>|$)", re.S)
BARE = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null")
BARE_TEXT = re.compile(
    r"[^,}\]]*"
)  # a value without marks runs to the next , } or ] (as in vLLM's parser)
MAX_DEPTH = 64  # objects and lists nested deeper than this are refused, long before Python's recursion limit


class Gemma4(Family):
    def parse(self, raw: str, schemas: dict[str, dict], thinking_open: bool = False) -> Parsed:
        """Read the model's thinking, reply and tool calls out of its raw output (special tokens included)."""
        text, _ = strip_stop(raw, self.stop_pieces)
        thoughts = THOUGHT.findall(text)
        text = THOUGHT.sub("", text)
        parsed = Parsed(thinking="\n".join(t.strip() for t, _ in thoughts))
        if (
            thoughts and not thoughts[-1][1] and not text.strip()
        ):  # still thinking when the output ended
            return parsed
        parsed.content = CALL.sub("", text).strip()
        return collect_calls(
            parsed, CALL.finditer(text), read_call, schemas, "<tool_call|>", EXAMPLE
        )

    def write_call(self, name: str, args: dict) -> str:
        return f"<|tool_call>call:{name}{write_value(args)}<tool_call|><|tool_response>"

    def write_output(self, thought: str | None, content: str, calls: list[tuple[str, dict]]) -> str:
        """With thinking on the model opens its thought channel itself (with it off, the prompt ends in an
        empty, closed one); <|tool_response> after its calls, <turn|> after an answer."""
        head = "" if thought is None else f"{self.thought_prefix}{thought}<channel|>"
        calls_text = "".join(
            self.write_call(n, a).removesuffix("<|tool_response>") for n, a in calls
        )
        return head + content + calls_text + ("<|tool_response>" if calls else "<turn|>")


EXAMPLE = 'Write a call as <|tool_call>call:NAME{argument:<|"|>text<|"|>,number:42}<tool_call|>.'


def read_call(body: str, schemas: dict[str, dict]) -> ToolCall | str:
    """One call:NAME{…} as a ToolCall, or a sentence saying what is wrong with it."""
    head = re.match(r"call:(\w+)", body)
    if not head:
        return "The tool call does not start with call:NAME."
    name = head.group(1)
    if name not in schemas:
        return f"There is no tool named {name!r}; the tools are {', '.join(sorted(schemas)) or 'none'}."
    try:
        arguments, end = read_value(body, head.end())
    except ValueError as e:
        return f"The arguments of {name} cannot be read: {e}."
    if not isinstance(arguments, dict) or body[end:].strip():
        return f"The arguments of {name} must be one {{key:value,…}} and nothing after it."
    return ToolCall(name, arguments)


def read_value(s: str, i: int, depth: int = 0):
    """The value that starts at s[i] in Gemma's notation, and the index just past it."""
    if s.startswith(QUOTE, i):
        end = s.find(QUOTE, i + len(QUOTE))
        if end < 0:
            raise ValueError('a string is not closed with <|"|>')
        return s[i + len(QUOTE) : end], end + len(QUOTE)
    if s.startswith(("{", "["), i):
        if depth == MAX_DEPTH:
            raise ValueError(f"objects and lists are nested more than {MAX_DEPTH} deep")
        close, keyed = ("}", True) if s[i] == "{" else ("]", False)
        return read_items(s, i + 1, close, keyed, depth + 1)
    return read_bare(s, i)


def read_bare(s: str, i: int):
    """A value without <|"|> marks: a number, true, false or null when it is one, else the text as a string."""
    run = BARE_TEXT.match(s, i)
    text = run.group(0).strip()
    if not text:
        raise ValueError(f"a value is missing at {s[i : i + 20]!r}")
    if (
        QUOTE in text or "{" in text or "[" in text
    ):  # half marked up: what the model meant is unclear
        raise ValueError(f"unexpected text at {s[i : i + 20]!r}")
    if BARE.fullmatch(text):
        return json.loads(text), run.end()
    return text, run.end()


def write_value(value) -> str:
    """A value in Gemma's notation, as read_value reads it: strings between <|"|>, keys bare and sorted (the
    chat template sorts them, case aside, so a call written here is the one the template writes)."""
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, dict):
        keys = sorted(value, key=str.lower)
        return "{" + ",".join(f"{key}:{write_value(value[key])}" for key in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(write_value(v) for v in value) + "]"
    return json.dumps(value)  # numbers, true, false, null


def read_items(s: str, i: int, close: str, keyed: bool, depth: int):
    """The items of an object (keyed) or a list, from just after its opening bracket."""
    items: dict | list = {} if keyed else []
    while True:
        if s.startswith(close, i):
            return items, i + 1
        if keyed:
            key = re.match(r"\s*(\w+)\s*:", s[i:])
            if not key:
                raise ValueError(f"expected key: at {s[i : i + 20]!r}")
            value, i = read_value(s, i + key.end(), depth)
            items[key.group(1)] = value
        else:
            value, i = read_value(s, i, depth)
            items.append(value)
        if s.startswith(",", i):
            i += 1
        elif not s.startswith(close, i):
            raise ValueError(f"expected , or {close} at {s[i : i + 20]!r}")


GEMMA4 = Gemma4(
    key="gemma4",
    name="Gemma 4",
    model_types=("gemma4", "gemma4_text"),
    # Also in the checkpoint's generation_config.json: <eos>, <turn|> after an answer, <|tool_response> for a tool.
    stop_pieces=("<turn|>", "<|tool_response>", "<eos>"),
    thought_prefix="<|channel>thought\n",
    channel_switch={
        "<|channel>": "thought",
        "<channel|>": "content",
        "<|tool_call>": "tool_call",
        "<tool_call|>": "content",
    },
    sampling=Sampling(temperature=1.0, top_p=0.95, top_k=64),
    drafter_suffix="-assistant",  # google/gemma-4-E2B-it-assistant drafts for google/gemma-4-E2B-it
    real_model="google/gemma-4-E2B-it",
    size="E2B (2B effective)",
    tiny="tiny-gemma4",
)
