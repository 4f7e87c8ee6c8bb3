"""Qwen3.5: ChatML turns, thinking inside <think>, tool calls in XML whose values are plain text.

    <|im_start|>assistant
    <think>
    …reasoning…
    </think>

    Let me compute that.

    <tool_call>
    <function=run_python>
    <parameter=code>
    print(2 ** 64)
    </parameter>
    </function>
    </tool_call><|im_end|>

<|im_end|> ends an answer and a tool call alike; only a <tool_call> in the output tells them apart. A value is the
text between the parameter's tags, so only the tool's JSON Schema says whether "42" is a number or a string.
"""

from __future__ import annotations

import json
import re

from agentloop.model_families.base import (
    Family,
    Parsed,
    Sampling,
    ToolCall,
    coerce,
    collect_calls,
    strip_stop,
)

CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.S)
FUNCTION = re.compile(r"\s*<function=([^>\n]*)>(.*?)</function>\s*$", re.S)
PARAMETER = re.compile(r"<parameter=([^>\n]*)>\n?(.*?)\n?</parameter>", re.S)


class Qwen3_5(Family):
    def parse(self, raw: str, schemas: dict[str, dict], thinking_open: bool = False) -> Parsed:
        """Read the model's thinking, reply and tool calls out of its raw output (special tokens included)."""
        text, _ = strip_stop(raw, self.stop_pieces)
        thinking = ""
        if thinking_open or text.lstrip().startswith("<think>"):
            text = text.lstrip().removeprefix("<think>")
            thinking, closed, text = text.partition("</think>")
            if not closed:  # still thinking when the output ended
                return Parsed(thinking=thinking.strip())
        content, _, calls_text = text.partition("<tool_call>")
        parsed = Parsed(thinking=thinking.strip(), content=content.strip())
        if not calls_text and "<tool_call>" not in text:
            return parsed
        return collect_calls(
            parsed,
            CALL.finditer("<tool_call>" + calls_text),
            read_call,
            schemas,
            "</tool_call>",
            EXAMPLE,
        )

    def write_call(self, name: str, args: dict) -> str:
        """Each argument in its own <parameter=…>, as Qwen's template writes it: a list or object as JSON, any
        other value as Python's str() (True, not true); coerce reads it back by the tool's schema."""
        params = "".join(
            f"<parameter={key}>\n{plain_text(value)}\n</parameter>\n" for key, value in args.items()
        )
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call><|im_end|>"

    def write_output(self, thought: str | None, content: str, calls: list[tuple[str, dict]]) -> str:
        """The thought closes the <think> the prompt opened; "\n\n" between the reply and the first call and
        "\n" between calls, as Qwen's template writes them; one <|im_end|> at the end."""
        body = "\n".join(self.write_call(n, a).removesuffix("<|im_end|>") for n, a in calls)
        text = "\n\n".join(part for part in (content, body) if part)
        return ("" if thought is None else f"{thought}\n</think>\n\n") + text + "<|im_end|>"


def plain_text(value) -> str:
    """A parameter's value as the template writes it (its tojson keeps non-ASCII text as it is)."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)


EXAMPLE = (
    "Write a call as <tool_call>\n<function=NAME>\n<parameter=ARGUMENT>\nvalue\n</parameter>\n</function>\n"
    "</tool_call>."
)


def read_call(body: str, schemas: dict[str, dict]) -> ToolCall | str:
    """One <tool_call> body as a ToolCall, or a sentence saying what is wrong with it."""
    function = FUNCTION.match(body)
    if not function:
        return "The tool call has no <function=NAME> … </function> inside <tool_call>."
    name, params = function.group(1).strip(), function.group(2)
    if name not in schemas:
        return f"There is no tool named {name!r}; the tools are {', '.join(sorted(schemas)) or 'none'}."
    properties = schemas[name].get("properties", {})
    arguments = {}
    for key, value in PARAMETER.findall(params):
        arguments[key.strip()] = coerce(value, properties.get(key.strip()))
    leftover = PARAMETER.sub("", params).strip()
    if leftover:
        return f"The call to {name} has text outside its <parameter=…> tags: {leftover[:80]!r}."
    return ToolCall(name, arguments)


QWEN3_5 = Qwen3_5(
    key="qwen3_5",
    name="Qwen3.5",
    model_types=("qwen3_5", "qwen3_5_text"),
    # The checkpoint stops only at <|endoftext|>; an answer and a tool call both end with <|im_end|>.
    stop_pieces=("<|im_end|>", "<|endoftext|>"),
    thought_prefix="<think>\n",
    channel_switch={
        "<think>": "thought",
        "</think>": "content",
        "<tool_call>": "tool_call",
        "</tool_call>": "content",
    },
    sampling=Sampling(temperature=1.0, top_p=1.0, top_k=20),
    real_model="Qwen/Qwen3.5-0.8B",
    size="0.8B",
    tiny="tiny-qwen3_5",
)
