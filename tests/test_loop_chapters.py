"""Chapters 5, 6, 10 and 12–15 say what their recorded runs show and what the chat templates write; these tests hold
them to it.

- Every panel names a recording with a spec, and every spec is one the demo server accepts.
- The forced continuations are the cases the chapters describe (a broken call, an invalid one, …),
  read by the real parsers and validator, and fit in the step's max_new_tokens.
- What the chapters say the templates write is what the tiny checkpoints' templates write.
- Once a recording exists (scripts/record_runs.py), it shows what its chapter says it shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentloop import events
from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS
from agentloop.model_families import FAMILIES
from agentloop.paths import MODELS_DIR
from agentloop.tools import TOOLS, validate
from agentloop.training.evaluate import TARGETS, states
from agentloop.training.evaluate_sessions import CONVERSATION_TARGETS, HELD
from tests.conftest import english

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "docs" / "chapters"
RUNS = CHAPTERS / "runs"
PREFIXES = ("05", "06", "10", "12", "13", "14", "15")
MODELS = {
    "tiny-qwen3_5": "qwen3_5",
    "tiny-gemma4": "gemma4",
    "agent-qwen3_5": "qwen3_5",
    "agent-gemma4": "gemma4",
}
PANEL = re.compile(r'<div class="agentloop-panel"[^>]*>')
REPLAY = re.compile(r'data-replay="runs/([^"]+)\.jsonl"')
SCHEMAS = {name: TOOLS[name].parameters for name in RunSettings().tools}


def chapter(prefix: str) -> Path:
    (path,) = english(
        CHAPTERS.glob(f"{prefix}-*.md")
    )  # the numbers are checked in the English prose
    return path


def panels(prefix: str) -> list[str]:
    """The recordings named by the chapter's panels, in order."""
    names = []
    for tag in PANEL.findall(chapter(prefix).read_text(encoding="utf-8")):
        m = REPLAY.search(tag)
        assert m, f"a panel in chapter {prefix} names no recording: {tag}"
        names.append(m[1])
    return names


def specs() -> dict[str, dict]:
    return {
        p.name.removesuffix(".spec.json"): json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(RUNS.glob("ch*.spec.json"))
        if p.name[2:4] in PREFIXES
    }


def recording(name: str) -> list[dict]:
    path = RUNS / f"{name}.jsonl"
    if not path.exists():
        pytest.fail(f"{path.name} is not recorded: run scripts/record_runs.py {name}")
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def only(evs: list[dict], kind: str) -> list[dict]:
    return [e for e in evs if e["type"] == kind]


def family_of(spec: dict):
    return FAMILIES[MODELS[spec["model"]]]


# -- panels and specs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_panel_names_a_recording_with_a_spec(prefix):
    names = panels(prefix)
    assert names, f"chapter {prefix} has no panel"
    for name in names:
        assert name.startswith(f"ch{prefix}"), name
        assert (RUNS / f"{name}.spec.json").exists(), f"chapter {prefix}: no spec for {name}"


def test_every_spec_is_used_by_a_panel():
    used = {name for prefix in PREFIXES for name in panels(prefix)}
    assert set(specs()) <= used, set(specs()) - used


@pytest.mark.parametrize("name", sorted(specs()))
def test_spec_is_a_run_the_server_accepts(name):
    from demo_server.schemas import RunRequest

    spec = specs()[name]
    assert spec["kind"] == "run" and spec["model"] in MODELS
    assert set(spec) <= {"kind", "model", "question", "settings", "forced", "decisions"}
    RunRequest(question=spec["question"], settings=spec["settings"], forced=spec.get("forced"))
    assert set(spec.get("decisions", [])) <= {"approve", "deny"}
    assert set(spec["settings"]) <= set(RunSettings.__dataclass_fields__)


# -- the forced continuations are the cases the chapters describe ----------------------------------------------------


def read(name: str) -> list:
    """Each forced output of the spec as the loop reads it: a FormatError, a list of calls, or the final text."""
    spec = specs()[name]
    family = family_of(spec)
    out = []
    for raw in spec["forced"]:
        parsed = family.parse(raw, SCHEMAS)
        out.append(parsed.error or parsed.tool_calls or parsed.content)
    return out


def is_error(x) -> bool:
    return hasattr(x, "message")


def is_call(x) -> bool:
    return isinstance(x, list) and len(x) == 1


def is_answer(x) -> bool:
    return isinstance(x, str) and x != ""


@pytest.mark.parametrize("name", ["ch12-format-error-gemma", "ch12-format-error-qwen"])
def test_format_error_runs_break_a_call_then_mend_it(name):
    first, second, third = read(name)
    assert is_error(first) and "Write a call as" in first.message
    assert is_call(second) and validate(TOOLS["run_python"], second[0].arguments) is None
    assert is_answer(third)


def test_format_error_runs_break_the_calls_the_way_the_chapter_says():
    assert "no closing <tool_call|>" in read("ch12-format-error-gemma")[0].message
    assert "outside its <parameter=" in read("ch12-format-error-qwen")[0].message


def test_sandbox_run_makes_two_valid_calls_then_answers():
    first, second, third = read("ch13-sandbox")
    for calls in (first, second):
        assert is_call(calls) and validate(TOOLS["run_python"], calls[0].arguments) is None
    assert "bytearray" in second[0].arguments["code"]
    assert is_answer(third)


def test_max_steps_run_calls_until_the_steps_run_out():
    spec = specs()["ch14-max-steps"]
    outputs = read("ch14-max-steps")
    assert len(outputs) == spec["settings"]["max_steps"] and all(is_call(o) for o in outputs)
    assert len({json.dumps(o[0].arguments) for o in outputs}) == len(
        outputs
    )  # no repeat is caught instead


def test_format_errors_run_writes_as_many_broken_calls_as_end_a_run():
    spec = specs()["ch14-format-errors"]
    outputs = read("ch14-format-errors")
    limit = spec["settings"].get("max_format_errors", RunSettings().max_format_errors)
    assert len(outputs) == limit <= spec["settings"]["max_steps"] and all(
        is_error(o) for o in outputs
    )


def test_time_limit_run_writes_a_long_answer():
    (output,) = read("ch14-time-limit")
    assert is_answer(output)
    assert specs()["ch14-time-limit"]["settings"]["time_limit_s"] < RunSettings().time_limit_s


def test_invalid_run_passes_the_parser_but_not_validation():
    first, second, third = read("ch15-invalid")
    assert is_call(first) and first[0].arguments == {"code": 42}  # Gemma's bare 42 is a number
    error = validate(TOOLS["run_python"], first[0].arguments)
    assert error and "'code'" in error and "must be a string" in error
    assert is_call(second) and validate(TOOLS["run_python"], second[0].arguments) is None
    assert is_answer(third)


@pytest.mark.parametrize("name", sorted(n for n, s in specs().items() if s.get("forced")))
def test_forced_outputs_fit_the_step_and_end_with_a_stop_token(name):
    from transformers import AutoTokenizer

    spec = specs()[name]
    folder = MODELS_DIR / spec["model"]
    if not (folder / "tokenizer.json").exists():
        pytest.fail(f"{folder} is missing: run `make models`")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    family = family_of(spec)
    for raw in spec["forced"]:
        assert raw.endswith(family.stop_pieces), raw[-40:]
        n = len(tokenizer(raw, add_special_tokens=False).input_ids)
        assert n <= spec["settings"]["max_new_tokens"], f"{name}: {n} tokens > max_new_tokens"


# -- what the chapters say the templates write ------------------------------------------------------------------------


@pytest.fixture
def render(tiny):
    """A conversation after agentloop's system prompt, as the tiny checkpoint's template writes it."""

    def render(
        family: str, messages: list[dict], tools=True, thinking=False, generation_prompt=True
    ) -> str:
        schemas = [TOOLS["run_python"].schema()] if tools else None
        return tiny(family).render(
            [{"role": "system", "content": SYSTEM_WITH_TOOLS}, *messages],
            schemas,
            thinking,
            generation_prompt,
        )

    return render


QUESTION = [{"role": "user", "content": "What is 2**64?"}]
CALLED = QUESTION + [
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I will run Python.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "run_python", "arguments": {"code": "print(2**64)"}},
            }
        ],
    },
    {
        "role": "tool",
        "name": "run_python",
        "tool_call_id": "1.0",
        "content": "18446744073709551616",
    },
]


def test_gemma_template_as_chapters_5_and_6_describe_it(render):
    prompt = render("gemma4", QUESTION)
    assert prompt.startswith("<bos><|turn>system\n" + SYSTEM_WITH_TOOLS)
    assert (
        '<|tool>declaration:run_python{description:<|"|>' in prompt
        and 'type:<|"|>OBJECT<|"|>' in prompt
    )
    # Thinking off: the generation prompt ends in an empty thought channel, already closed.
    assert prompt.endswith(
        "<|turn>user\nWhat is 2**64?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"
    )
    assert render("gemma4", QUESTION, thinking=True).startswith("<bos><|turn>system\n<|think|>")
    assert "declaration" not in render("gemma4", QUESTION, tools=False)
    step2 = render("gemma4", CALLED, thinking=True)
    # The call goes back in Gemma's notation, the result into the same open turn, and no new turn is opened.
    assert step2.endswith(
        '<|tool_call>call:run_python{code:<|"|>print(2**64)<|"|>}<tool_call|>'
        '<|tool_response>response:run_python{value:<|"|>18446744073709551616<|"|>}<tool_response|>'
    )
    assert "I will run Python." not in step2  # the model's thoughts are never written back
    assert step2.count("<|turn>model") == 1


def test_qwen_template_as_chapters_5_and_6_describe_it(render):
    prompt = render("qwen3_5", QUESTION)
    # The tools block first, the system text after its <IMPORTANT> reminder.
    assert prompt.startswith("<|im_start|>system\n# Tools\n") and "<bos>" not in prompt
    assert "</IMPORTANT>\n\n" + SYSTEM_WITH_TOOLS + "<|im_end|>\n" in prompt
    listed = prompt.split("<tools>\n", 1)[1].split("</tools>", 1)[0].strip().splitlines()
    assert [json.loads(line) for line in listed] == [
        TOOLS["run_python"].schema()
    ]  # schema() as it is
    assert "<function=example_function_name>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert render("qwen3_5", QUESTION, thinking=True).endswith("<|im_start|>assistant\n<think>\n")
    assert "<tools>" not in render("qwen3_5", QUESTION, tools=False)
    step2 = render("qwen3_5", CALLED, thinking=True)
    assert "<think>\nI will run Python.\n</think>" in step2
    assert (
        "<function=run_python>\n<parameter=code>\nprint(2**64)\n</parameter>\n</function>\n</tool_call>"
        in step2
    )
    assert step2.endswith(
        "<|im_start|>user\n<tool_response>\n18446744073709551616\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n"
    )


@pytest.mark.parametrize("family", ["gemma4", "qwen3_5"])
def test_step_prompts_extend_each_other_and_old_thoughts_are_dropped(render, family):
    """Chapter 6: with nothing re-spelled, a step's prompt starts with the last one — but Gemma's empty thought
    channel, which ends a prompt with thinking off, is not kept in the history; a user message after a thought
    drops that thought."""
    first = render(family, QUESTION)
    called = [{**m, "reasoning_content": ""} if m["role"] == "assistant" else m for m in CALLED]
    if family == "gemma4":
        empty_thought = "<|channel>thought\n<channel|>"
        assert first.endswith(empty_thought) and not render(family, called).startswith(first)
        first = first.removesuffix(empty_thought)
    assert render(family, called).startswith(first)
    later = CALLED + [{"role": "user", "content": "And 2**65?"}]
    assert "I will run Python." not in render(family, later, thinking=True)


# -- the recordings, once made, show what the chapters say ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(specs()))
def test_recording_is_valid_events_of_its_spec(name):
    evs = recording(name)
    for e in evs:
        events.check(e)
    start, end = evs[0], evs[-1]
    assert start["type"] == "run_start" and end["type"] == "run_end"
    settings = specs()[name]["settings"]
    assert {k: start["settings"][k] for k in settings} == settings


@pytest.mark.parametrize(
    "name,declared", [("ch05-gemma", "<|tool>declaration:run_python"), ("ch05-qwen", "<tools>")]
)
def test_ch05_the_prompt_declares_the_tool(name, declared):
    evs = recording(name)
    assert only(evs, "run_start")[0]["tools"] == ["run_python"]
    assert declared in only(evs, "context")[0]["prompt"]


def test_ch05_no_tools_means_none_in_the_prompt():
    evs = recording("ch05-no-tools")
    assert only(evs, "run_start")[0]["tools"] == []
    assert "run_python" not in only(evs, "context")[0]["prompt"]


def test_ch10_kept_guesses_are_marked_and_the_counts_add_up():
    evs = recording("ch10-mtp")
    assert only(evs, "run_start")[0]["model"].endswith("agent-gemma4")
    for end in only(evs, "model_end"):
        tokens = [e for e in only(evs, "token") if e["step"] == end["step"]]
        mtp = end["mtp"]
        assert sum(bool(t.get("drafted")) for t in tokens) == mtp["accepted"] > 0
        assert mtp["drafted"] == 6 * (mtp["forwards"] - 1)
        assert end["n_tokens"] in (
            mtp["forwards"] + mtp["accepted"],
            mtp["forwards"] + mtp["accepted"] - 1,
        )
        assert not tokens[0].get(
            "drafted"
        )  # the first token of a step is the prefill's, never a guess
    # The first exercise counts step 1 as the recording does.
    first = only(evs, "model_end")[0]
    n, mtp = first["n_tokens"], first["mtp"]
    text = " ".join(chapter("10").read_text(encoding="utf-8").split())
    assert f"step 1 writes {n} tokens in {mtp['forwards']} forward passes" in text
    assert f"{mtp['accepted']} of the {mtp['drafted']} guesses" in text
    assert f"{n} = {mtp['forwards']} + {mtp['accepted']}" in text


@pytest.mark.parametrize("name", ["ch06-gemma", "ch06-qwen"])
def test_ch06_step_two_adds_the_call_and_its_result(name):
    evs = recording(name)
    contexts, results = only(evs, "context"), only(evs, "tool_result")
    assert len(contexts) >= 2 and results
    first, second = contexts[:2]
    assert first["added_from"] == 0 and 0 < second["added_from"] <= len(first["prompt"])
    assert results[0]["output"] in second["prompt"][second["added_from"] :]


@pytest.mark.parametrize("name", ["ch12-thinking-gemma", "ch12-thinking-qwen"])
def test_ch12_thinking_a_reply_and_a_call(name):
    evs = recording(name)
    step1 = [t for t in only(evs, "token") if t["step"] == 1]
    assert {"thought", "tool_call", "control"} <= {t["channel"] for t in step1}
    calls = only(evs, "tool_call")
    assert calls and calls[0]["step"] == 1 and "error" not in calls[0]


@pytest.mark.parametrize("name", ["ch12-format-error-gemma", "ch12-format-error-qwen"])
def test_ch12_format_error_is_told_and_mended(name):
    evs = recording(name)
    broken, mended = only(evs, "tool_call")[:2]
    assert broken["name"] is None and broken["error"] and broken["call_id"] == "1.0"
    assert mended["step"] == 2 and "error" not in mended
    assert "Your tool call could not be read." in only(evs, "context")[1]["prompt"]
    assert evs[-1]["stop_reason"] == "final"


def test_ch13_the_sandbox_held():
    evs = recording("ch13-sandbox")
    probe, memory = only(evs, "tool_result")
    assert "user id: 65534" in probe["output"] and "folder: /data" in probe["output"]
    assert "/etc/passwd -> FileNotFoundError" in probe["output"] and "network ->" in probe["output"]
    assert memory["is_error"] and "Memory limit reached." in memory["output"]
    assert evs[-1]["stop_reason"] == "final"


@pytest.mark.parametrize(
    "name,reason",
    [
        ("ch14-final", "final"),
        ("ch14-max-steps", "max_steps"),
        ("ch14-format-errors", "format_errors"),
        ("ch14-time-limit", "time_limit"),
    ],
)
def test_ch14_each_run_ends_the_way_its_tab_says(name, reason):
    evs = recording(name)
    assert evs[-1]["stop_reason"] == reason
    if reason == "max_steps":
        assert evs[-1]["final"] == "" and evs[-1]["steps"] == specs()[name]["settings"]["max_steps"]
    if reason == "time_limit":
        assert only(evs, "model_end")[-1]["finish"] == "user_stopped"


def test_ch14_a_step_cut_at_max_new_tokens():
    evs = recording("ch14-max-new-tokens")
    assert only(evs, "model_end")[0]["finish"] == "max_new_tokens"


def test_ch15_denied_call_is_told_to_the_model():
    evs = recording("ch15-deny")
    (decision,) = [d for d in only(evs, "decision") if not d["approved"]][:1]
    assert decision["by"] == "reader"
    result = [r for r in only(evs, "tool_result") if r["call_id"] == decision["call_id"]][0]
    assert result["is_error"] and "denied" in result["output"]


def test_ch15_invalid_call_is_not_asked_about():
    evs = recording("ch15-invalid")
    invalid = only(evs, "tool_call")[0]
    assert invalid["error"] and invalid["call_id"] not in {
        p["call_id"] for p in only(evs, "permission")
    }
    assert [d["approved"] for d in only(evs, "decision")] == [True]


def test_ch15_repeated_call_is_caught():
    evs = recording("ch15-repeat")
    assert len(only(evs, "permission")) == 1
    first, second = only(evs, "tool_result")[:2]
    assert not first["is_error"] and "already made this exact call" in second["output"]
    # The trained model's own tokens, as the chapter says: nothing forced, the same call twice, then an answer.
    assert not any(t.get("forced") for t in only(evs, "token"))
    assert only(evs, "tool_call")[0]["args"] == only(evs, "tool_call")[1]["args"]
    assert evs[-1]["stop_reason"] == "final" and states(evs[-1]["final"], first["output"].strip())


def test_ch08_the_numbers_in_the_text_are_the_recordings():
    evs = recording("ch08")
    assert json.loads((RUNS / "ch08.spec.json").read_text())["question"] == "What is 48213 * 9127?"
    (pre1,), (pre2,) = only(evs, "prefill")[:1], only(evs, "prefill")[1:2]
    out1 = only(evs, "model_end")[0]["n_tokens"]
    text = " ".join(chapter("08").read_text(encoding="utf-8").split())
    assert (
        pre2["reused"] == pre1["n_tokens"] + out1 - 1
    )  # the reply's last token was never fed back
    for claim in (
        f"step 1's prompt has {pre1['n_tokens']} tokens",
        f"writes {out1} tokens",
        f"Step 2's prompt has {pre2['n_tokens']} tokens",
        f"Its first {pre2['reused']} are step 1's prompt and the first {out1 - 1} tokens",
        f"computes {pre2['n_tokens'] - pre2['reused']} tokens",
        f"It took {pre2['ms']:.1f} ms, against {pre1['ms']:.1f} ms",
    ):
        assert claim in text, claim


def test_ch08_counts_the_prefills_pieces_in_the_recordings():
    """Chapter 8 says the running question never needs a second piece of PREFILL_PIECE tokens, and in how many
    pieces the recorded run of pi's own prompt (chapter 16) computes its first step."""
    from agentloop.model_backends.simple_backend import PREFILL_PIECE

    text = " ".join(chapter("08").read_text(encoding="utf-8").split())
    assert f"pieces of `PREFILL_PIECE` tokens, {PREFILL_PIECE}:" in text
    computed = [p["n_tokens"] - (p["reused"] or 0) for p in only(recording("ch08"), "prefill")]
    assert max(computed) <= PREFILL_PIECE
    first = only(recording("ch16-pi-own"), "prefill")[0]
    n = first["n_tokens"] - (first["reused"] or 0)
    pieces = -(-n // PREFILL_PIECE)
    words = {4: "four", 5: "five", 6: "six", 7: "seven"}
    assert f"computes {n:,} tokens at its first step, in {words[pieces]} pieces" in text


def test_ch09_the_run_shows_sampling_as_the_chapter_says():
    evs = recording("ch09-run")
    settings = only(evs, "run_start")[0]["settings"]
    tokens = only(evs, "token")
    below = [t for t in tokens if t["rank"] > 1]
    unsure = [t for t in tokens if t["p_sampled"] is not None and t["p_sampled"] < 0.9]
    text = " ".join(chapter("09").read_text(encoding="utf-8").split())
    assert settings["temperature"] > 1 and settings["top_k"] == 0 and settings["top_p"] == 1.0
    whole = [t for t in tokens if t["kept"] == 2074]  # the tiny vocabulary, all of it
    assert (
        f"`kept` is the whole vocabulary, 2,074, for {len(whole)} of its {len(tokens)} tokens, "
        f"and at least {min(t['kept'] for t in tokens):,} for the others"
    ) in text
    count = ["one token was", "two tokens were", "three tokens were", "four tokens were"][
        len(unsure) - 1
    ]
    assert f"only {count} drawn" in text
    if len(below) == len(unsure) == 1:  # the one unsure draw is the one below rank 1
        assert "and it was drawn below rank 1" in text
    else:
        some = "both" if len(below) == len(unsure) == 2 else ["one", "two", "three"][len(below) - 1]
        assert f"{some} of them below rank 1" in text
    for drawn in below:  # the chapter describes each draw below rank 1
        assert f"`{drawn['text']}`, at rank {drawn['rank']} with `p` {drawn['p']:.3g}" in text
    first, last = below[0], below[-1]
    assert f"`p_sampled` {first['p_sampled']:.3g}" in text
    code = only(evs, "tool_call")[0]["args"]["code"]  # what the call ran, as the chapter quotes it
    assert f"run `{code}`" in text and only(evs, "tool_result")[0]["output"].strip() in text
    assert f"Rank {last['rank']} and `p_sampled` {last['p_sampled']:.3f}" in text
    assert evs[-1]["final"] in text
    assert f"`seed` ({settings['seed']}, in its settings)" in text


@pytest.mark.parametrize(
    "name, said",
    [
        ("ch12-thinking-gemma", "This needs 48213 * 9127; I will run Python."),
        ("ch12-thinking-qwen", "This needs 48213 * 9127; I will run Python."),
    ],
)
def test_ch12_the_thoughts_the_chapter_quotes_are_the_models_own(name, said):
    evs = recording(name)
    assert not specs()[name].get("forced") and not any(t.get("forced") for t in only(evs, "token"))
    thought = "".join(
        t["text"] for t in only(evs, "token") if t["step"] == 1 and t["channel"] == "thought"
    )
    assert said in thought
    assert said in " ".join(chapter("12").read_text(encoding="utf-8").split())
    # the call is the question's product whatever the thought says (the chapter says a slip goes no further)
    assert only(evs, "tool_call")[0]["args"]["code"] == "print(48213 * 9127)"


def test_ch02_and_ch12_say_what_the_answers_after_thinking_state():
    # Both chapters replay the trained toys answering the running question with thinking on; chapter 12 quotes each
    # step-2 thought and answer, chapter 2 says the answers state the tool's number exactly when both do.
    text = " ".join(chapter("12").read_text(encoding="utf-8").split())
    thoughts, states = set(), []
    for name, family in (("ch12-thinking-gemma", "Gemma 4"), ("ch12-thinking-qwen", "Qwen3.5")):
        evs = recording(name)
        output = only(evs, "tool_result")[0]["output"].strip()
        thought = "".join(
            t["text"] for t in only(evs, "token") if t["step"] == 2 and t["channel"] == "thought"
        )
        thoughts.add(thought.removeprefix("thought\n").strip())
        assert f"{family} `{evs[-1]['final']}`" in text
        states.append(output in evs[-1]["final"])
    assert len(thoughts) == 1 and f"both think `{thoughts.pop()}`" in text
    assert all(states)
    finals = [recording(name)[-1]["final"] for name in ("ch02-gemma4", "ch02-qwen3_5")]
    output = only(recording("ch02-gemma4"), "tool_result")[0]["output"].strip()
    text = " ".join(chapter("02").read_text(encoding="utf-8").split())
    both = all(output in final for final in finals)
    assert both == ("In both runs the answer states the number the tool printed" in text)


def measured(model: str) -> dict[str, dict[str, tuple[float, int, int]]]:
    """A model card's "Measured" section (eval-tiny --card): per set, figure -> (value, hits, total)."""
    card = (MODELS_DIR / model / "README.md").read_text().split("\n## Measured")[1]
    sets = {}
    for name, body in re.findall(
        r"\n([A-Z][^\n:]*):\n\n((?:- .*\n?)+)",
        card,
    ):
        sets[name.lower()] = {}
        for figure, value, of, hits, passes in re.findall(
            r"- (\w+): ([\d.]+) (?:of (\d+)|\((\d+) tokens in (\d+) forward passes\))", body
        ):
            total = int(of or passes)
            sets[name.lower()][figure] = (
                float(value),
                int(hits) if hits else round(float(value) * total),
                total,
            )
    return sets


def test_ch03_and_ch10_quote_the_model_cards():
    # The figures chapters 3 and 10 give are those `eval-tiny --card` wrote into the committed models' cards.
    qwen = measured("agent-qwen3_5")
    code = [qwen[s]["code_correct"][0] for s in ("training templates", "held-out phrasings")]
    text = " ".join(chapter("03").read_text(encoding="utf-8").split())
    _, hits, total = qwen["reader questions"]["code_correct"]
    no_tool = qwen["held-out phrasings"]["no_tool"][0]
    for claim in (
        f"writes the right code for {code[0]:.2f} of the first set's tool questions and {code[1]:.2f} of the held-out set's",
        f"for {hits} of the {total} reader questions that need the tool",
        f"It answers {no_tool:.2f} of the held-out greetings and definitions without a tool",
    ):
        assert claim in text, claim
    # The conversations and pi (issues 41 and 42): each set's figure, then its held-out part's.
    lower = text.lower()
    for name, targets in CONVERSATION_TARGETS.items():
        (figure,) = targets
        ours, held = qwen[name][figure][0], qwen[name + HELD.lower()][figure][0]
        claim = f"{name} {ours:.2f} and {held:.2f} held out"
        assert claim in lower, claim
    pi = qwen["held-out phrasings through pi"]["code_correct"][0]
    claim = f"the right code for {pi:.2f} of the held-out questions asked through real pi"
    assert claim in text, claim
    gemma = measured("agent-gemma4")
    for name, card in (("agent-qwen3_5", qwen), ("agent-gemma4", gemma)):
        _, hits, total = card["sorts largest first"]["code_correct"]
        claim = (
            f"`{name}` writes the right code for {hits} of the {total} sorts asked largest first"
        )
        assert claim in text, claim
    code = [gemma[s]["code_correct"][0] for s in ("training templates", "held-out phrasings")]
    aim = TARGETS["code_correct"]  # the card's target, as evaluate holds it
    target = f"{'short of' if code[0] < aim else 'reaching'} the {aim:.2f} target"
    claim = f"writes the right code for {code[0]:.2f} of the first set's tool questions, {target}, and {code[1]:.2f} of the held-out set's"
    assert claim in text, claim
    mtp = gemma["training templates"]
    value, tokens, passes = mtp["mtp_tokens_per_forward"]
    _, same, runs = mtp["mtp_same_tokens"]
    text = " ".join(chapter("10").read_text(encoding="utf-8").split())
    for claim in (
        f"-n {runs}`",
        f"gave {value:.2f} tokens per forward pass of the model ({tokens:,} tokens in {passes:,} passes)",
        f"all {runs} runs wrote exactly the tokens"
        if same == runs
        else f"{same} of {runs} runs wrote exactly",
    ):
        assert claim in text, claim


def test_ch03_gives_each_training_run_as_its_training_json_records_it():
    # Phases, steps and minutes (each phase's, summed) as `train-tiny` wrote them next to the weights.
    text = " ".join(chapter("03").read_text(encoding="utf-8").split())
    words = {7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven"}
    for model in ("agent-gemma4", "agent-qwen3_5"):
        phases = json.loads((MODELS_DIR / model / "training.json").read_text())["phases"]
        steps = sum(phase["steps"] for phase in phases)
        minutes = round(sum(phase["minutes"] for phase in phases), 1)
        claim = f"`{model}` in one run of {words[len(phases)]} phases, {steps:,} steps, {minutes:g} minutes"
        assert claim in text, claim


def test_ch14_and_ch15_exercises_describe_their_recordings():
    # Chapter 14's max_new_tokens tab: step 1 cut off inside its call, a format error; the exercise's answer says
    # how the model went on and how the run ended. Chapter 15's Denied tab: the answer it quotes is the recording's.
    evs = recording("ch14-max-new-tokens")
    (cut, reply) = only(evs, "model_end")
    assert cut["finish"] == "max_new_tokens" and cut["raw"].endswith("<function=run_python>\n")
    assert only(evs, "tool_call")[0]["error"] and len(only(evs, "tool_call")) == 1
    text = " ".join(chapter("14").read_text(encoding="utf-8").split())
    assert "A format error: the cut falls inside the call" in text
    if reply["finish"] == "stop_token":
        assert f"a reply of {reply['n_tokens']} tokens" in text
    else:  # the reply was cut off too: a final answer, cut short
        assert reply["finish"] == "max_new_tokens" and "it too is cut off at ten tokens" in text
    assert f"`{evs[-1]['final']}`" in text
    assert f"The run ends with `{evs[-1]['stop_reason']}`" in text
    evs = recording("ch15-deny")
    text = " ".join(chapter("15").read_text(encoding="utf-8").split())
    assert only(evs, "decision")[0]["approved"] is False and evs[-1]["stop_reason"] == "final"
    assert f"the recording's answer is `{evs[-1]['final']}`" in text
    # The Repeated call tab's sort: the chapter says the toy sorted largest first exactly when it did.
    code = only(recording("ch15-repeat"), "tool_call")[0]["args"]["code"]
    assert ("reverse=True" in code) == ("sorted the numbers largest first" in text)


def test_ch07_gives_the_photo_runs_prompt_length_as_recorded():
    # "the photo's 300 tokens are 300 of the prompt's N in step 1": N is the recorded step 1 prefill's length,
    # and step 2 reads the photo again (its context still counts 300 image tokens).
    first, *later = only(recording("ch07-photo-qwen"), "context")
    text = " ".join(chapter("07").read_text(encoding="utf-8").split())
    assert f"the photo's 300 tokens are 300 of the prompt's {first['n_tokens']} in step 1" in text
    assert later and all(c["media_tokens"] == {"image": 300} for c in later)
