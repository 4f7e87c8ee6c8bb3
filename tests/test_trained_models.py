"""The embedded default models (agent-qwen3_5, agent-gemma4), trained here to use run_python, use it by themselves.

No forced continuations here: every token is the model's own, greedy, through the real loop and the real sandbox:
a call approved, a call denied, a call repeated (the models learned to repeat one when asked to check twice, and
the loop refuses the repeat), a greeting without a tool, and the held-out figures.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.simple_harness import REPEATED_CALL, SimpleHarness
from agentloop.training.checkpoint import model_card
from agentloop.training.evaluate import (
    ALL_SETS,
    PI_SETS,
    SETS,
    evaluate,
    has_drafter,
    held_out,
    loop_for,
    states,
)
from agentloop.training.evaluate_sessions import CONVERSATION_TARGETS, evaluate_conversations
from tests.conftest import AGENTS, run_harness

# (family, set, figure) a model does not reach yet: expected to miss, and a failure once they don't. On these 30
# questions, with the targets 10 points lower, both reach every figure of the built-in loop's sets. Through real pi,
# both write pi's bash call for every tool question, but agent-qwen3_5 answers the held-out greeting "Hey! Thanks
# for the help." with a number (its card: no_tool 0.80 of 10 through pi, target 0.90).
# agent-gemma4 leaves three of its card's 40 sorts asked largest first unclosed, writing one number again and
# again until the step runs out of tokens (its card: well_formed 0.925, target 0.99).
BELOW_TARGET: set[tuple[str, str, str]] = {
    ("qwen3_5", "held-out phrasings through pi", "no_tool"),
    ("gemma4", "sorts largest first", "well_formed"),
}


@pytest.fixture(params=sorted(AGENTS))
def agent(request):
    """The session's backend on each trained model in turn (the loop only runs on it)."""
    return request.getfixturevalue(f"agent_{request.param}")


def run(llm, question: str, tmp_path, decide, **settings) -> list[dict]:
    got, _ = run_harness(
        lambda emit: SimpleHarness(
            llm,
            [],
            question,
            RunSettings(temperature=0, max_new_tokens=128, **settings),
            emit,
            files=tmp_path,
        ),
        decide,
    )
    return got


def asked(llm, question: str, tmp_path, history=()):
    """A question run to its end with every call approved, after `history`: (its events, the harness)."""
    settings = RunSettings(temperature=0, max_new_tokens=128, max_steps=3)
    return run_harness(
        lambda emit: SimpleHarness(llm, list(history), question, settings, emit, files=tmp_path),
        lambda e: True,
    )


def only(evs, kind):
    return [e for e in evs if e["type"] == kind]


def test_calls_run_python_and_answers_with_the_result(agent, tmp_path):
    evs = run(agent, "What is 48213 * 9127?", tmp_path, decide=lambda e: True)
    call, result = only(evs, "tool_call")[0], only(evs, "tool_result")[0]
    assert (
        call["name"] == "run_python"
        and not call.get("error")
        and only(evs, "decision")[0]["approved"]
    )
    assert "48213" in call["args"]["code"] and "9127" in call["args"]["code"]
    assert result["output"].strip() == str(48213 * 9127)
    assert evs[-1]["stop_reason"] == "final" and str(48213 * 9127) in evs[-1]["final"]
    assert all(t["forced"] is False for t in only(evs, "token") if "forced" in t)


def test_denied_call_does_not_run(agent, tmp_path):
    evs = run(
        agent, "Sort these numbers: 42, 7, 19.", tmp_path, decide=lambda e: False, max_steps=3
    )
    assert only(evs, "decision")[0]["approved"] is False
    results = only(evs, "tool_result")
    assert results and results[0]["is_error"] and "denied" in results[0]["output"]
    assert evs[-1]["type"] == "run_end"


def test_asked_to_check_twice_it_repeats_the_call_and_the_loop_refuses_the_repeat(agent, tmp_path):
    # The book's running question: the repeat is what is tested here, not copying (both toys now write
    # 5821 + 3907 for "5821 + 39077", and repeat that), in one of training's CHECK_TWICE wordings (agent-gemma4
    # repeats on this one, not on "Run it twice to be sure.").
    evs = run(
        agent,
        "What is 48213 * 9127? Check it twice.",
        tmp_path,
        decide=lambda e: True,
    )
    calls, results = only(evs, "tool_call"), only(evs, "tool_result")
    assert (
        len(calls) == 2
        and calls[0]["args"] == calls[1]["args"]
        and calls[0]["step"] < calls[1]["step"]
    )
    assert (
        len(only(evs, "permission")) == 1
    )  # the repeat is refused before anyone is asked, and nothing runs
    assert results[1]["is_error"] and results[1]["output"] == REPEATED_CALL
    assert evs[-1]["stop_reason"] == "final" and states(
        evs[-1]["final"], results[0]["output"].strip()
    )


def test_a_greeting_needs_no_tool(agent, tmp_path):
    evs = run(agent, "Hello there!", tmp_path, decide=lambda e: True)
    assert not only(evs, "tool_call") and evs[-1]["stop_reason"] == "final" and evs[-1]["final"]


def test_the_model_card_is_the_one_training_writes(agent):
    # The card's text comes from training.json (the measured figures after it, from eval-tiny --card).
    folder = Path(agent.model_id)
    card = (folder / "README.md").read_text()
    recipe = json.loads((folder / "training.json").read_text())
    assert card.split("\n## Measured")[0].rstrip("\n") == model_card(
        agent, folder.name, recipe
    ).rstrip("\n")
    # The measured figures of both sets, below-target ones marked as such (BELOW_TARGET above lists them).
    assert "## Measured" in card and all(name.capitalize() in card for name in SETS)


@pytest.mark.parametrize("phrasings", sorted({**SETS, **PI_SETS}))
def test_thirty_held_out_questions(agent, phrasings):
    # The figures of `agentloop models eval-tiny`, on 30 questions of each set (10 of the set through real pi),
    # with targets 10 points lower. With a drafter beside the model (agent-gemma4's), the MTP figures too (on the
    # training wording).
    tally = evaluate(
        agent,
        held_out(30, seed=1_000_003, phrasings=phrasings),
        mtp=has_drafter(agent) and phrasings == "training templates",
        sampled_too=phrasings == "training templates",
        log=lambda *_: None,
        loop=loop_for(phrasings),
    )
    assert has_drafter(agent) == (agent.family.key == "gemma4")
    missed = {f for f, target in ALL_SETS[phrasings].items() if tally.rate(f) < target - 0.10}
    known = {f for family, s, f in BELOW_TARGET if family == agent.family.key and s == phrasings}
    assert not missed - known, (missed, tally.misses)
    assert not known - missed, (
        f"{known - missed} now reach their targets: take them out of BELOW_TARGET"
    )
    if known:
        pytest.xfail(f"{agent.model_id}: {sorted(known)} below target, as BELOW_TARGET says why")


def test_the_conversation_sets_run_through_the_loop(agent):
    """Issue 41's sets: one conversation of each runs through the real loop and the real sandbox and counts its
    figure (the held-out parts differ only in wording); the figures themselves are the card's (eval-tiny --card)."""
    for name, targets in CONVERSATION_TARGETS.items():
        tally = evaluate_conversations(agent, name, 1, seed=1_000_003, log=lambda *_: None)
        assert [tally.totals.get(figure) for figure in targets] == [1], (name, tally.totals)


def test_the_example_questions_the_panel_offers_are_answered_right(agent, tmp_path):
    """examples.json (shown beside the live question box) offers only questions this model answers: its own
    tokens, greedy, through the real loop; a tool question prints what the file expects and says it."""
    examples = json.loads((Path(agent.model_id) / "examples.json").read_text())
    assert examples["note"]["en"] and examples["note"]["zh"]
    for example in examples["questions"]:
        history = []
        if (
            "after" in example
        ):  # a follow-up: asked after its first question, in the same conversation
            history = asked(agent, example["after"]["en"], tmp_path)[1].messages
        evs = asked(agent, example["en"], tmp_path, history)[0]
        results = only(evs, "tool_result")
        if "expect" not in example:
            assert not results and evs[-1]["stop_reason"] == "final", example
            continue
        assert results and results[0]["output"].strip() == example["expect"], (example, results)
        assert states(evs[-1]["final"], example["expect"]), (example, evs[-1]["final"])


def test_the_recommended_settings_are_those_it_was_measured_at(agent):
    # eval-tiny measures greedy decoding, so generation_config.json says do_sample false.
    assert agent.sampling_defaults.temperature == 0.0
