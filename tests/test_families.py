"""The families: templates and parsers agree, tool calls come back typed, malformed calls become format errors."""

from __future__ import annotations

import json

import pytest

from agentloop.model_families import FAMILIES, UnsupportedModel, for_model_type
from agentloop.model_families.base import FormatError, strip_stop

SCHEMAS = {
    "run_python": {
        "type": "object",
        "properties": {"code": {"type": "string"}},
        "required": ["code"],
    },
    "convert": {
        "type": "object",
        "properties": {
            "value": {"type": "number"},
            "times": {"type": "integer"},
            "exact": {"type": "boolean"},
            "units": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object"},
            "label": {"type": "string"},
        },
    },
}
TOOLS = [
    {"type": "function", "function": {"name": n, "description": f"The {n} tool.", "parameters": p}}
    for n, p in SCHEMAS.items()
]
ARGS = {
    "value": 12.5,
    "times": 3,
    "exact": True,
    "units": ["km", "mi"],
    "options": {"round": 2},
    "label": "42",
}
CODE = 'words = "a, b"\nprint(len(words))  # {"not": "json"}'
EMPTY_THOUGHT = "<|channel>thought\n<channel|>"


def model_part(backend, messages, thinking=False):
    """What the model wrote in the last message: the conversation rendered, less the prompt it was given."""
    prompt = backend.render(messages[:-1], TOOLS, thinking)
    full = backend.render(messages, TOOLS, thinking, generation_prompt=False)
    # Gemma's prompt with thinking off ends in an empty, closed thought channel that its history leaves out:
    # the model writes after it, and the history has the model's turn without it.
    prompt = prompt.removesuffix(EMPTY_THOUGHT) if backend.family.key == "gemma4" else prompt
    assert full.startswith(prompt), (
        "the template must render the model's message after the prompt it was given"
    )
    # The template writes a newline after the stop token; the model's own output ends at the stop token.
    return full[len(prompt) :].removesuffix("\n")


@pytest.mark.parametrize("name,args", [("run_python", {"code": CODE}), ("convert", ARGS)])
def test_rendered_call_parses_back(backend, name, args):
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}],
        },
        {"role": "tool", "name": name, "content": "done"},
    ]
    raw = model_part(backend, messages[:2])
    parsed = backend.family.parse(raw, SCHEMAS)
    assert parsed.error is None, parsed.error
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(name, args)]
    # The value types survive: Qwen's plain-text values through the schema, Gemma's through its notation.
    if name == "convert":
        got = parsed.tool_calls[0].arguments
        assert (
            isinstance(got["times"], int)
            and isinstance(got["exact"], bool)
            and got["label"] == "42"
        )


@pytest.mark.parametrize("name,args", [("run_python", {"code": CODE}), ("convert", ARGS)])
def test_write_call_is_the_inverse_of_parse(backend, name, args):
    """write_call writes what the checkpoint's chat template writes for the call, and parse reads it back."""
    written = backend.family.write_call(name, args)
    parsed = backend.family.parse(written, SCHEMAS)
    assert parsed.error is None and parsed.content == "", parsed
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(name, args)]
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}],
        },
        {"role": "tool", "name": name, "content": "done"},
    ]
    # The stop token aside: Gemma's <|tool_response> is written by the template with the result that follows.
    pieces = backend.family.stop_pieces
    assert (
        strip_stop(written, pieces)[0] == strip_stop(model_part(backend, messages[:2]), pieces)[0]
    )


def test_thinking_and_reply_parse_back(backend):
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": "A greeting."},
    ]
    prompt = backend.render(messages[:1], None, True)
    raw = model_part(backend, messages, thinking=True)
    if (
        backend.family.key == "gemma4"
    ):  # Gemma's history never has the thought: the model writes it as this
        assert "A greeting." not in raw
        raw = "<|channel>thought\nA greeting.<channel|>" + raw
    parsed = backend.family.parse(
        raw, SCHEMAS, thinking_open=prompt.endswith(backend.family.thought_prefix)
    )
    assert (parsed.thinking, parsed.content, parsed.tool_calls, parsed.error) == (
        "A greeting.",
        "Hello!",
        [],
        None,
    )


def test_tool_result_goes_where_the_family_puts_it(backend):
    messages = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "run_python", "arguments": {"code": "print(4)"}},
                }
            ],
        },
        {"role": "tool", "name": "run_python", "content": "4\n"},
    ]
    prompt = backend.render(messages, TOOLS, False)
    if backend.family.key == "qwen3_5":
        # in a user turn, the result's text trimmed
        assert (
            "<|im_start|>user\n<tool_response>\n4\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
            in prompt
        )
    else:  # in the same model turn, which stays open; with thinking off the empty thought channel follows
        assert prompt.endswith(
            '<|tool_response>response:run_python{value:<|"|>4\n<|"|>}<tool_response|>'
            + EMPTY_THOUGHT
        )


QWEN_BAD = {
    "no closing tag": "<tool_call>\n<function=run_python>\n<parameter=code>\nprint(1)\n</parameter>\n</function>\n<|im_end|>",
    "no function": "<tool_call>\nrun_python(print(1))\n</tool_call><|im_end|>",
    "unknown tool": "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call><|im_end|>",
    "text outside parameters": "<tool_call>\n<function=run_python>\ncode=print(1)\n</function>\n</tool_call><|im_end|>",
}
GEMMA_BAD = {
    "no closing tag": '<|tool_call>call:run_python{code:<|"|>print(1)<|"|>}<|tool_response>',
    "string not closed": '<|tool_call>call:run_python{code:<|"|>print(1)}<tool_call|><|tool_response>',
    "not call:": '<|tool_call>run_python{code:<|"|>x<|"|>}<tool_call|><|tool_response>',
    "unknown tool": "<|tool_call>call:rm_rf{}<tool_call|><|tool_response>",
    "value missing": "<|tool_call>call:run_python{code:}<tool_call|><|tool_response>",
    "value half marked up": '<|tool_call>call:run_python{code:print(<|"|>1<|"|>)}<tool_call|><|tool_response>',
    "bare value not closed": "<|tool_call>call:run_python{code:Tokyo<tool_call|><|tool_response>",
    "nested too deeply": "<|tool_call>call:run_python{code:"
    + "[" * 5000
    + "<tool_call|><|tool_response>",
    "trailing text": '<|tool_call>call:run_python{code:<|"|>x<|"|>} and more<tool_call|><|tool_response>',
}


@pytest.mark.parametrize(
    "family,case,raw",
    [("qwen3_5", k, v) for k, v in QWEN_BAD.items()]
    + [("gemma4", k, v) for k, v in GEMMA_BAD.items()],
)
def test_malformed_call_is_a_format_error_not_an_exception(family, case, raw):
    parsed = FAMILIES[family].parse(raw, SCHEMAS)
    assert isinstance(parsed.error, FormatError), case
    assert parsed.tool_calls == []
    assert "Write a call as" in parsed.error.message  # it tells the model the right format


GEMMA_UNQUOTED = {  # a value written without <|"|> marks, and what it is read as (vLLM and SGLang agree)
    "a word is a string": ("location:Tokyo,unit:celsius", {"location": "Tokyo", "unit": "celsius"}),
    "an integer stays a number": ("times:3", {"times": 3}),
    "a float stays a number": ("value:-12.5e1", {"value": -125.0}),
    "booleans and null stay typed": ("exact:true,label:null", {"exact": True, "label": None}),
    "spaces around it are dropped": ("location: San Francisco ", {"location": "San Francisco"}),
    "digits then letters are a string": ("label:12abc", {"label": "12abc"}),
    "text with a colon is a string": ("label:http://x/y", {"label": "http://x/y"}),
    "inside a list": ('units:[km,<|"|>mi<|"|>,2]', {"units": ["km", "mi", 2]}),
    "inside an object": ("options:{mode:fast,round:2}", {"options": {"mode": "fast", "round": 2}}),
}


@pytest.mark.parametrize("case", GEMMA_UNQUOTED)
def test_gemma_reads_a_bare_value_as_a_string_unless_it_is_a_literal(case):
    body, expected = GEMMA_UNQUOTED[case]
    schemas = {"get_weather": {"type": "object"}}
    raw = f"<|tool_call>call:get_weather{{{body}}}<tool_call|><|tool_response>"
    parsed = FAMILIES["gemma4"].parse(raw, schemas)
    assert parsed.error is None, case
    assert parsed.tool_calls[0].arguments == expected


def test_gemma_reads_nesting_up_to_its_limit_and_names_the_limit_past_it():
    from agentloop.model_families.gemma4 import MAX_DEPTH

    def call(
        depth: int,
    ) -> str:  # code is a string; the nesting sits in an extra argument the parser reads first
        return (
            '<|tool_call>call:run_python{code:<|"|>x<|"|>,extra:'
            + "[" * (depth - 1)
            + "1"
            + "]" * (depth - 1)
            + "}<tool_call|><|tool_response>"
        )

    assert (
        FAMILIES["gemma4"].parse(call(MAX_DEPTH), SCHEMAS).tool_calls
    )  # {…} is level 1, the lists the rest
    error = FAMILIES["gemma4"].parse(call(MAX_DEPTH + 1), SCHEMAS).error
    assert error and f"nested more than {MAX_DEPTH} deep" in error.message


def test_unknown_model_type_is_refused():
    assert for_model_type("gemma4").key == "gemma4" and for_model_type("qwen3_5").key == "qwen3_5"
    with pytest.raises(UnsupportedModel, match="llama"):
        for_model_type("llama")


def test_qwen_coerces_plain_text_by_schema():
    raw = (
        "<tool_call>\n<function=convert>\n<parameter=value>\n3\n</parameter>\n<parameter=times>\nseven\n</parameter>\n"
        "<parameter=label>\n007\n</parameter>\n</function>\n</tool_call><|im_end|>"
    )
    args = FAMILIES["qwen3_5"].parse(raw, SCHEMAS).tool_calls[0].arguments
    # A value that does not fit its type stays text, so validation names the field.
    assert args == {"value": 3, "times": "seven", "label": "007"}


WHOLE_STEPS = [
    ("I add them.", "", [("run_python", {"code": "print(2 + 3)"})]),
    (None, "", [("run_python", {"code": "print(2 + 3)"})]),
    ("Two calls.", "", [("run_python", {"code": "print(1)"}), ("convert", ARGS)]),
    ("It printed 5.", "2 + 3 = 5.", []),
    (None, "2 + 3 = 5.", []),
]


@pytest.mark.parametrize("thought, content, calls", WHOLE_STEPS)
def test_write_output_is_the_inverse_of_parse_for_a_whole_step(backend, thought, content, calls):
    """What write_output writes after a prompt, parse reads back: the thought, the reply and every call; and it
    ends with the stop token the loop stops at."""
    written = backend.family.write_output(thought, content, calls)
    # The prompt opened <think>
    thinking_open = thought is not None and backend.family.key == "qwen3_5"
    parsed = backend.family.parse(written, SCHEMAS, thinking_open=thinking_open)
    assert parsed.error is None, parsed
    assert (parsed.thinking, parsed.content) == (thought or "", content)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == calls
    assert strip_stop(written, backend.family.stop_pieces)[1] is not None


@pytest.mark.parametrize("thought, content, calls", WHOLE_STEPS)
def test_write_output_is_what_the_template_keeps_of_the_step(backend, thought, content, calls):
    """Qwen3.5's template writes the last question's steps back as the model wrote them, so write_output must
    equal the template's rendering after the prompt. Gemma 4's template drops the thought (and the empty
    thought channel) from its history: there write_output without the thought must stand in the history."""
    message = {
        "role": "assistant",
        "content": content,
        "reasoning_content": thought or "",
        "tool_calls": [
            {"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls
        ],
    }
    conversation = [{"role": "user", "content": "Go."}, message]
    if calls:
        conversation += [{"role": "tool", "name": n, "content": "done"} for n, _ in calls]
    thinking = thought is not None
    prompt = backend.render(conversation[:1], TOOLS, thinking)
    full = backend.render(conversation, TOOLS, thinking, generation_prompt=False)
    written = backend.family.write_output(thought, content, calls)
    if backend.family.key == "qwen3_5":
        assert full[len(prompt) :].startswith(written)
    else:
        kept = backend.family.write_output(None, content, calls)
        assert strip_stop(kept, backend.family.stop_pieces)[0] in full


def test_every_family_names_its_real_model_and_its_tiny_checkpoint():
    """What the menu and chapter 7's preview read of a family, in the Family object, not beside it."""
    from agentloop.model_families import FAMILIES, REVISIONS
    from agentloop.paths import MODELS_DIR

    for family in FAMILIES.values():
        assert "/" in family.real_model and family.size, family.key
        config = json.loads((MODELS_DIR / family.tiny / "config.json").read_text())
        assert config["model_type"] in family.model_types
    assert set(REVISIONS) <= {f.real_model for f in FAMILIES.values()}
