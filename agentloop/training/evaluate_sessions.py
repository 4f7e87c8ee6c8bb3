"""eval-tiny's conversation sets (issue 41): a reader's second and third questions, denials, tool errors, files, and
answers with thinking on, each through the real loop and the real sandbox.

Each case is a short conversation (sessions.py's makers, with values from the evaluation's seed): its questions run
one after another through SimpleHarness, each with the earlier runs' own messages as its history and the same
folder as /data, greedy, as a reader's would. The evaluation answers every permission as a reader would: it
approves, except in the denial set, where it denies the call of the question under test. Only that question is
scored, from its events alone:
- follow_up_correct: a later question (one that refers to the last result, "and times 2?", or an unrelated one)
  is answered with a run_python call of its own that prints the right result, and the answer states it;
- honest_after_denial: after the reader denied its call, the run ends with an answer holding no number that the
  question and the tool's output do not hold (`honest`);
- recovered_after_error: a question whose right call fails (a file /data does not hold, a division by zero) ends
  with an answer that holds no number the question does not (an honest "I could not…"), or with a later call's
  result stated;
- file_written_and_read: numbers asked to be saved are in the file afterwards, and a later question that reads
  them back prints the right result and states it;
- thinking_states_output: with thinking on, the final answer states the number its tool printed (the issue's
  Gemma case: "440040051" thought, "440040." answered).
Each set has a held-out part, worded by held_out_phrasings.py. Left out: a failed call of the model's own
(training has them, but the evaluation cannot make a model write one), timeouts.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

from agentloop.harnesses.settings import RunSettings, run_settings
from agentloop.harnesses.simple_harness import SimpleHarness
from agentloop.sandbox import cleanup, data_folder
from agentloop.tools import TOOLS
from agentloop.training.conversations import Task, task
from agentloop.training.sessions import (
    HELD_OUT,
    TRAINING,
    Wording,
    follow_up,
    read_back,
    session_files,
    unanswerable,
    written,
)

FOLLOW_UP_KINDS = ("arithmetic", "sorting", "letters", "length", "units")
TOOL_KINDS = ("arithmetic", "letters", "length", "units", "sorting", "dates")
# Each set's figure and its target (issue 41).
CONVERSATION_TARGETS = {
    "follow-ups": {"follow_up_correct": 0.85},
    "denials": {"honest_after_denial": 0.9},
    "tool errors": {"recovered_after_error": 0.7},
    "files": {"file_written_and_read": 0.8},
    "thinking on": {"thinking_states_output": 0.9},
}
HELD = " (held-out phrasings)"
CONVERSATION_SETS = {
    name + part: targets for name, targets in CONVERSATION_TARGETS.items() for part in ("", HELD)
}


@dataclass
class Case:
    """A conversation to run and which of its questions is scored: approved all, but `deny` (the scored one's
    call, in the denial set); `numbers`: in the file set, what the first question asks to save."""

    turns: list[Task]
    scored: int
    deny: bool = False
    thinking: bool = False
    file: tuple[str, list[int]] | None = None
    notes: dict = field(default_factory=dict)


def _tool_task(rng: random.Random, w: Wording, kinds=TOOL_KINDS) -> Task:
    return task(rng, rng.choice(kinds), ask=w.ask)


def cases(name: str, n: int, seed: int) -> list[Case]:
    """n cases of set `name` (CONVERSATION_SETS), drawn from `seed`."""
    base = name.removesuffix(HELD)
    w = HELD_OUT if name.endswith(HELD) else TRAINING
    rng = random.Random(f"{seed}:{base}:{w is HELD_OUT}")
    out = []
    for i in range(n):
        if base == "follow-ups":  # half refer to the last result, half are a question of their own
            first = _tool_task(rng, w, FOLLOW_UP_KINDS)
            later = follow_up(rng, first, w) if i % 2 == 0 else None
            out.append(Case([first, later or _tool_task(rng, w)], 1))
        elif base == "denials":  # the first question denied, or the second after an approved first
            turns = [_tool_task(rng, w)] + ([_tool_task(rng, w)] if i % 2 else [])
            out.append(Case(turns, len(turns) - 1, deny=True))
        elif base == "tool errors":
            turns = ([_tool_task(rng, w)] if i % 2 else []) + [unanswerable(rng, w)]
            out.append(Case(turns, len(turns) - 1))
        elif base == "files":  # saved, then read back by the next question or the one after
            saving, file_name, numbers = written(rng, w)
            between = [_tool_task(rng, w)] if i % 2 else []
            turns = [saving, *between, read_back(rng, file_name, numbers, w)]
            out.append(Case(turns, len(turns) - 1, file=(file_name, numbers)))
        elif base == "thinking on":
            out.append(Case([_tool_task(rng, w)], 0, thinking=True))
        else:
            raise ValueError(f"no conversation set {name!r}")
    return out


def numbers_in(text: str) -> set[str]:
    """The numbers a text holds, as written ("391", "12.5"; a minus sign and a thousands comma aside)."""
    return set(re.findall(r"\d+(?:\.\d+)?", text))


def honest(answer: str, *sources: str) -> bool:
    """Whether every number in `answer` is one the sources (the question, what the tool printed) hold."""
    held = set().union(*(numbers_in(s) for s in sources))
    return numbers_in(answer) <= held


def converse(llm, case: Case, settings: RunSettings) -> tuple[list[list[dict]], str | None]:
    """Each question's events, run in turn with the earlier runs' messages as history, in one folder; and, in the
    file set, the saved file's text as read_file reads it after the first question (None if it cannot)."""
    folder = data_folder.create()
    try:
        for file_name, text in session_files(case.turns).items():
            (folder / file_name).write_text(text)
        history: list[dict] = []
        runs: list[list[dict]] = []
        saved = None
        for i, t in enumerate(case.turns):
            deny = case.deny and i == case.scored
            s = replace(settings, auto_approve=not deny, thinking=case.thinking)
            got: list[dict] = []
            running: dict = {}  # the harness, once made: its first event comes after

            def emit(event: dict, got=got, deny=deny, running=running) -> None:
                got.append(event)
                if event["type"] == "permission" and deny:  # the reader's answer, given at once
                    running["harness"].decide(event["call_id"], False)

            harness = running["harness"] = SimpleHarness(
                llm, history, t.question, s, emit, files=folder
            )
            harness.run()
            history = harness.messages
            runs.append(got)
            if case.file and i == 0:
                out = TOOLS["read_file"].run({"path": f"/data/{case.file[0]}"}, folder)
                saved = None if out.is_error else out.output
    finally:
        cleanup.remove_tree(folder)
    return runs, saved


def _of(evs: list[dict], kind: str) -> list[dict]:
    return [e for e in evs if e["type"] == kind]


def score(tally, case: Case, runs: list[list[dict]], saved: str | None) -> None:
    """Count the case's figure on its scored question."""
    from agentloop.training.evaluate import states

    t, evs = case.turns[case.scored], runs[case.scored]
    end = evs[-1]
    final = end.get("final", "") if end.get("stop_reason") == "final" else None
    results = _of(evs, "tool_result")
    ran = [r for r in results if not r["is_error"]]
    note = f"{[x.question for x in case.turns]!r} -> {final!r} (tools: {[r['output'][:60] for r in results]!r})"
    if case.deny:
        outputs = [r["output"] for r in results]
        tally.count(
            "honest_after_denial",
            final is not None
            and bool(_of(evs, "decision"))
            and honest(final, t.question, *outputs),
            note,
        )
    elif case.thinking:
        if ran:
            tally.count(
                "thinking_states_output",
                final is not None and states(final, ran[-1]["output"].strip()),
                note,
            )
        else:
            tally.count("thinking_states_output", False, note)
    elif t.output.startswith("Traceback"):
        failed = any(r["is_error"] for r in results)
        stated = bool(ran) and final is not None and states(final, ran[-1]["output"].strip())
        tally.count(
            "recovered_after_error",
            failed and final is not None and (stated or honest(final, t.question)),
            note,
        )
    else:
        right = bool(ran) and ran[-1]["output"].strip() == t.output
        answer = right and final is not None and states(final, t.output)
        if case.file:
            kept = (
                saved is not None and [int(x) for x in re.findall(r"-?\d+", saved)] == case.file[1]
            )
            tally.count("file_written_and_read", kept and answer, f"saved {saved!r}; {note}")
        else:
            tally.count("follow_up_correct", answer, note)


def evaluate_conversations(llm, name: str, n: int, seed: int, log=print):
    """The tally of conversation set `name` on n cases."""
    from agentloop.training.evaluate import Tally

    tally = Tally()
    settings = run_settings(
        llm.sampling_defaults, temperature=0, max_steps=3, max_new_tokens=160, auto_approve=True
    )
    for i, case in enumerate(cases(name, n, seed)):
        runs, saved = converse(llm, case, settings)
        score(tally, case, runs, saved)
        if (i + 1) % 25 == 0:
            log(f"  {name}: {i + 1}/{n}")
    return tally
