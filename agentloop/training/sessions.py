"""Conversations of several questions, as a reader holds them in one panel: the training data and the evaluation
sets of issue 41.

A session is two to four questions, each a `Task` (conversations.py) that SimpleHarness runs with the earlier
ones' messages as its history, so each later question is answered for itself, with a call of its own. After the
first question a later one is, as LATER_WEIGHTS draws it:
- independent: a fresh question of any kind;
- a follow-up that refers to the last result or list without repeating it ("and times 2?", "now largest first",
  "what about cherry?"), whose code carries the value the tool printed before;
- chat: a greeting or thanks, answered without a tool;
- denied: a tool question whose call the reader denies; the answer says so and states no number
  ("I could not run it: the call was denied."); the next question may allow it ("ok, run it now");
- error: a call that fails, read as the sandbox prints it (`failed_output`): either the question itself cannot be
  answered (a file /data does not hold, a division by zero: an honest answer, no number) or a call of the model's
  went wrong (a typo, an unclosed bracket, a loop past the time limit: the failed call is in the conversation but
  not trained, the corrected call and the answer are);
- a file: numbers written to a file of /data, then read back by a later question (a sum, a sort, the largest).
The first question may be denied or fail too. Wording is phrasing.py's (training) or held_out_phrasings.py's
(`held_out=True`: the evaluation's held-out part), the values drawn from the caller's seed.
Left out: the rendering (data.py) and the runs (evaluate.py).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import difflib
import io
import linecache
import random
import re
import traceback
from dataclasses import dataclass

from agentloop.sandbox.bubblewrap import DEFAULT_TIMEOUT
from agentloop.training.conversations import (
    DESCENDING_SHARE,
    UNITS,
    Task,
    a_word,
    made_up_word,
    task,
)
from agentloop.training.held_out_phrasings import held_out_follow_up, held_out_question
from agentloop.training.phrasing import follow_up_question, training_question

# What the model answers when its call was denied, or cannot be answered from what the tool printed: no number.
DENIED_ANSWERS = (
    "I could not run it: the call was denied.",
    "The call was denied, so I have no result.",
    "I could not run it: the call was denied. Allow it and ask again if you want the result.",
)
MISSING_FILE_ANSWERS = (
    "I could not read it: /data/{name} does not exist.",
    "There is no file /data/{name}, so I cannot answer.",
)
ZERO_DIVISION_ANSWERS = (
    "It cannot be computed: division by zero.",
    "That has no result: you cannot divide by zero.",
)
# A later question's kind, and how often each is drawn. Independent questions and follow-ups are most of them,
# since a reader's next question is mostly one of those; denials and errors are each about a tenth, files a little
# more (both toys saved a list worst of all: chapter 3). Half the questions before have nothing to follow up (a chat,
# a date, a denied call): those draw an independent question, so follow-ups end about a sixth of later questions
# (0.15 to 0.16 of 800, by the seed), saves about a seventh (0.13 to 0.15) and reads of a saved file an eighth
# (0.10 to 0.13).
LATER_WEIGHTS = {
    "independent": 20,
    "follow_up": 46,
    "chat": 8,
    "denied": 12,
    "error": 12,
    "file": 18,
}
# The first question of a session is denied or fails this often (as a reader's first call may be).
FIRST_DENIED, FIRST_ERROR = 0.08, 0.08
# A session starts by saving numbers this often, as chapter 13's reader does ("Save 120, 450, ... to
# /data/numbers.txt."): a model that has only seen saves after another question sorts a first question's list.
FIRST_SAVE = 0.08
# Of the model's own failed calls: a typo, an unclosed bracket, a loop past the time limit.
MISTAKES = ("typo", "bracket", "timeout")
SAVED_NAMES = ("numbers", "scores", "values", "my_list", "saved", "results")
MAIN = "/tmp/main.py"  # where the sandbox puts run_python's code (its tracebacks name it)


@dataclass
class Wording:
    """How a session's questions are worded: first questions (`ask`) and later ones (`follow`)."""

    ask: object = training_question
    follow: object = follow_up_question


TRAINING = Wording()
HELD_OUT = Wording(held_out_question, held_out_follow_up)


def failed_output(code: str, files: dict[str, str] | None = None) -> str:
    """What run_python returns for `code` that fails, as the sandbox prints it: the traceback naming /tmp/main.py
    (Python's own, so its carets too), then "exit code 1". The code runs here, in this process, with an `open`
    that serves only `files` (a name /data does not hold raises as in the sandbox): only code this module wrote."""
    files = files or {}
    # As linecache reads a file: every line ends with a newline (3.11 places the carets by it)
    lines = [line if line.endswith("\n") else line + "\n" for line in code.splitlines(True)]
    linecache.cache[MAIN] = (len(code), None, lines, MAIN)
    try:
        compiled = compile(code, MAIN, "exec")
    except SyntaxError as e:
        return "".join(traceback.format_exception_only(e)).rstrip("\n") + "\nexit code 1"

    def opened(path, *args, **kwargs):
        name = str(path).removeprefix("/data/")
        if name not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return io.StringIO(files[name])

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compiled, {"__name__": "__main__", "open": opened})  # noqa: S102 - this module's code
    except Exception as e:  # noqa: BLE001 - any error is what the model reads
        tb = traceback.TracebackException.from_exception(e)
        frames = traceback.StackSummary.from_list([f for f in tb.stack if f.filename == MAIN])
        text = "Traceback (most recent call last):\n" + "".join(frames.format())
        last = "".join(tb.format_exception_only()).rstrip("\n")
        if isinstance(
            e, NameError
        ):  # the hint Python 3.11's own excepthook adds (its traceback module does not)
            close = difflib.get_close_matches(e.name, dir(builtins), n=1)
            last += f". Did you mean: '{close[0]}'?" if close else ""
        return f"{text}{last}\nexit code 1"
    raise ValueError(f"{code!r} does not fail")


def timed_out_output() -> str:
    """What run_python returns for code killed at the sandbox's wall-clock limit, having printed nothing."""
    return f"Killed after the {DEFAULT_TIMEOUT:g} s wall-clock limit."


def mistaken(rng: random.Random, code: str) -> tuple[str, str]:
    """A failed version of a good call, as a model might write it, and what the sandbox returns for it."""
    kind = rng.choice(MISTAKES)
    if kind == "typo":
        wrong = code.replace("print(", "pritn(", 1)
    elif kind == "bracket":
        wrong = code[: code.rindex(")")] + code[code.rindex(")") + 1 :]
    else:
        wrong = "while True:\n    pass\n" + code
        return wrong, timed_out_output()
    return wrong, failed_output(wrong)


def denied(t: Task, rng: random.Random) -> Task:
    t.denied, t.answer = True, rng.choice(DENIED_ANSWERS)
    return t


def unanswerable(rng: random.Random, w: Wording) -> Task:
    """A question whose right call fails: a file /data does not hold, or a division by zero."""
    if rng.random() < 0.5:
        t = task(rng, "file_lines", ask=w.ask)
        name = next(iter(t.files))
        t.files = {}  # the reader names a file that is not there
        t.answer = rng.choice(MISSING_FILE_ANSWERS).format(name=name)
    else:
        a = rng.randint(1, 99999)
        t = Task(
            "arithmetic",
            w.ask(rng, "arithmetic", op="/", a=a, b=0),
            f"print({a} / 0)",
            answer=rng.choice(ZERO_DIVISION_ANSWERS),
            thought=f"This needs {a} / 0; I will run Python.",
        )
    t.output = failed_output(t.code)
    return t


def recovered(t: Task, rng: random.Random) -> Task:
    """`t` with a failed call of the model's before its good one."""
    t.failed = mistaken(rng, t.code)
    return t


def follow_up(rng: random.Random, before: Task, w: Wording) -> Task | None:
    """A question that refers to `before`'s result or values, answered with a call of its own; None when
    `before` has nothing to follow up (a chat, a denied or failed call, a date)."""
    if before.code is None or before.denied or before.output.startswith(("Traceback", "Killed")):
        return None
    if before.kind == "arithmetic" and re.fullmatch(r"-?\d{1,12}", before.output):
        op = rng.choice(("times", "plus", "minus"))
        k = rng.randint(2, 12) if op == "times" else rng.randint(1, 999)
        expression = f"{before.output} {dict(times='*', plus='+', minus='-')[op]} {k}"
        value = eval(expression)  # noqa: S307 - integers drawn here
        return Task(
            "follow_up",
            w.follow(rng, op, k=k),
            f"print({expression})",
            str(value),
            rng.choice([f"{expression} = {value}.", f"It is {value}.", f"That makes {value}."]),
            thought=f"The last result was {before.output}; now {expression}.",
        )
    if before.kind == "sorting":
        numbers = ast.literal_eval(before.output)
        reverse = "reverse=True" not in before.code
        order = "largest_first" if reverse else "smallest_first"
        value = str(sorted(numbers, reverse=reverse))
        return Task(
            "follow_up",
            w.follow(rng, order),
            f"print(sorted({numbers}{', reverse=True' if reverse else ''}))",
            value,
            rng.choice([f"Sorted: {value}.", f"In order: {value}."]),
            thought="The same list, sorted the other way.",
        )
    if before.kind in ("letters", "length"):
        word = a_word(rng)
        if before.kind == "letters":
            letter = re.search(r'\.count\("(.)"\)', before.code).group(1)
            code, value = f'print("{word}".count("{letter}"))', str(word.count(letter))
            answer = rng.choice([f'"{word}" has {value} {letter}.', f"There are {value}."])
        else:
            code, value = f'print(len("{word}"))', str(len(word))
            answer = rng.choice([f'"{word}" has {value} letters.', f"It has {value} letters."])
        return Task(
            "follow_up",
            w.follow(rng, "other_word", word=word),
            code,
            value,
            answer,
            thought=f'The same question for "{word}".',
        )
    if before.kind == "units":
        m = re.fullmatch(r"print\(round\(([\d.]+) \* ([\d.]+)(?: \+ ([\d.]+))?, 2\)\)", before.code)
        factor, offset = float(m.group(2)), float(m.group(3) or 0)
        x = rng.randint(1, 500)
        # the question's unit, found again by its factor
        unit = next(u for u, (_, f, o) in UNITS.items() if (f, o) == (factor, offset))
        code = (
            f"print(round({x} * {factor} + {offset}, 2))"
            if offset
            else f"print(round({x} * {factor}, 2))"
        )
        value = str(round(x * factor + offset, 2))
        return Task(
            "follow_up",
            w.follow(rng, "other_amount", n=x, unit=unit),
            code,
            value,
            rng.choice([f"{x} {unit} is {value} {UNITS[unit][0]}.", f"That is {value}."]),
            thought=f"The same conversion for {x} {unit}.",
        )
    return None


def retry(rng: random.Random, before: Task, w: Wording) -> Task:
    """After a denied call, the reader allows it: the same call, run this time."""
    return Task(
        "retry",
        w.follow(rng, "retry"),
        before.code,
        before.output,  # kept when the call was denied, though the conversation never showed it
        rng.choice([f"It is {before.output}.", f"The result is {before.output}."]),
        files=before.files,
        thought="The call is allowed now; I will run it.",
    )


def written(rng: random.Random, w: Wording) -> tuple[Task, str, list[int]]:
    """A question that saves numbers to a file of /data, the file's name and the numbers."""
    # Names no first question's file has (those are WORDS'), so a file written is the one read back.
    name = f"{rng.choice(SAVED_NAMES + (made_up_word(rng),))}.txt"
    numbers = [rng.randint(0, 999) for _ in range(rng.randint(3, 7))]
    # The list first, as a literal: the model copies a question's numbers well after a `[` (sorted([...]) is
    # its commonest call) and badly after `f.write("`, where the first digit was a guess (chapter 3's files).
    code = (
        f"numbers = {numbers}\n"
        f'with open("/data/{name}", "w") as f:\n'
        '    f.write(" ".join(map(str, numbers)))\n'
        'print("saved")'
    )
    return (
        Task(
            "write",
            w.follow(rng, "write", list=numbers, name=name),
            code,
            "saved",
            rng.choice([f"Saved to /data/{name}.", f"I wrote them to /data/{name}."]),
            thought=f"I will write the numbers to /data/{name}.",
        ),
        name,
        numbers,
    )


def read_back(rng: random.Random, name: str, numbers: list[int], w: Wording) -> Task:
    """A later question about the numbers an earlier one saved in /data/`name`."""
    how = rng.choice(("read_sum", "read_sorted", "read_largest"))
    load = f'numbers = [int(x) for x in open("/data/{name}").read().split()]\n'
    code, value = {
        "read_sum": (load + "print(sum(numbers))", str(sum(numbers))),
        "read_sorted": (load + "print(sorted(numbers))", str(sorted(numbers))),
        "read_largest": (load + "print(max(numbers))", str(max(numbers))),
    }[how]
    return Task(
        "read",
        w.follow(rng, how, name=name),
        code,
        value,
        rng.choice([f"It is {value}.", f"From /data/{name}: {value}."]),
        thought=f"I will read /data/{name}.",
    )


def session(
    rng: random.Random,
    w: Wording = TRAINING,
    size: int | None = None,
    descending_share: float = DESCENDING_SHARE,
) -> list[Task]:
    """A conversation of `size` (else two to four) questions, each as a good run holds it; that share of its
    fresh sorts asked largest first (a training phase's own share, as its single questions have it)."""
    size = size or rng.randint(2, 4)
    first, saved = task(rng, ask=w.ask, descending_share=descending_share), None
    if rng.random() < FIRST_SAVE:
        first, *saved = written(rng, w)
    elif first.code is not None and rng.random() < FIRST_DENIED:
        first = denied(first, rng)
    elif first.code is not None and rng.random() < FIRST_ERROR:
        first = recovered(first, rng) if rng.random() < 0.5 else unanswerable(rng, w)
    turns = [first]
    while len(turns) < size:
        before = turns[-1]
        if before.denied and rng.random() < 0.5:
            turns.append(retry(rng, before, w))
            continue
        # A saved file is read back next, or after other questions (as eval-tiny's files set asks); at the last
        # question at the latest; and it may be read again: a read after a save was the files' other miss.
        if saved and (rng.random() < 0.5 or len(turns) == size - 1):
            turns.append(read_back(rng, *saved, w))
            saved = saved if rng.random() < 0.4 else None
            continue
        kind = rng.choices(list(LATER_WEIGHTS), weights=list(LATER_WEIGHTS.values()))[0]
        nxt = follow_up(rng, before, w) if kind == "follow_up" else None
        if kind == "file":
            nxt, name, numbers = written(rng, w)
            saved = (name, numbers)
        elif kind == "chat":
            nxt = task(rng, rng.choice(("greeting", "greeting", "definition")), ask=w.ask)
        elif kind == "denied":
            nxt = denied(_tool_task(rng, w, descending_share), rng)
        elif kind == "error":
            nxt = (
                recovered(_tool_task(rng, w, descending_share), rng)
                if rng.random() < 0.5
                else unanswerable(rng, w)
            )
        turns.append(nxt or task(rng, ask=w.ask, descending_share=descending_share))
    return turns


def _tool_task(rng: random.Random, w: Wording, descending_share: float = DESCENDING_SHARE) -> Task:
    while True:
        t = task(rng, ask=w.ask, descending_share=descending_share)
        if t.code is not None:
            return t


def session_files(turns: list[Task]) -> dict[str, str]:
    """The files /data holds before the session's first question: those its questions come with (a file a
    question writes, the run writes itself)."""
    return {name: text for t in turns for name, text in t.files.items()}
