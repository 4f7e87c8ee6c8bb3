"""Synthetic tool-use conversations for training the tiny models, and the answers that check them.

Each `Task` is one question with what a good run does: the code run_python should get, what that code prints
(computed here in plain Python, as the sandbox would print it), and the final answer, which must state that
result. `conversation()` turns a task into the messages SimpleHarness would hold at the end of the run, so they
can be rendered through the model's own chat template exactly as the loop renders them.

Kinds that need run_python: arithmetic on numbers of one to five digits (+ - * /, powers, squares, cubes), letters in a word
and a word's length (made-up words too, so the model must copy rather than memorise), unit conversion, sorting a
list, a date difference, and counting the lines of a file in /data. Kinds that need no tool: greetings, and
definitions the model is told to decline politely. How each question is worded is phrasing.py's (training) or
held_out_phrasings.py's (the evaluation's second figure): a maker draws the values, asks `ask` for the words.
Asked to check twice, a tool task becomes a run where the model repeats its call and the loop refuses the
repeat (a later training phase only: see `task`). In a conversation of several questions (sessions.py) a task may
also be denied, or hold a failed call before its good one.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta

from agentloop.harnesses.simple_harness import DENIED, REPEATED_CALL
from agentloop.training.phrasing import listed, training_question

TOOL_KINDS = ("arithmetic", "letters", "length", "units", "sorting", "dates", "file_lines")
CHAT_KINDS = ("greeting", "definition")

WORDS = (
    "strawberry banana bookshelf butter mississippi committee balloon coffee giraffe pepper rhythm "
    "umbrella keyboard notebook elephant parallel assessment bubble cinnamon tomorrow accommodate "
    "hippopotamus occurrence raspberry sunflower possession address millennium pineapple grammar"
).split()
UNITS = {  # question unit -> (answer unit, factor, offset); the code is round(x * factor + offset, 2)
    "km": ("miles", 0.621371, 0.0),
    "miles": ("km", 1.609344, 0.0),
    "kg": ("pounds", 2.20462, 0.0),
    "pounds": ("kg", 0.453592, 0.0),
    "meters": ("feet", 3.28084, 0.0),
    "feet": ("meters", 0.3048, 0.0),
    "°C": ("°F", 1.8, 32.0),
    "liters": ("gallons", 0.264172, 0.0),
}
TERMS = (
    "serendipity ephemeral entropy photosynthesis democracy irony gravity recursion metaphor inflation "
    "osmosis algorithm nostalgia paradox symbiosis"
).split()


@dataclass
class Task:
    kind: str
    question: str
    code: str | None = None  # what run_python should receive; None when no tool is needed
    output: str = ""  # what that code prints, as the tool result
    answer: str = ""  # the final answer
    files: dict[str, str] = field(default_factory=dict)  # files to put in /data first
    thought: str = ""  # a short thought, for runs with thinking on
    # Asked to check twice: the model repeats its call and the loop refuses the repeat
    repeat: bool = False
    # In a conversation of several questions (sessions.py): the reader denies the call, so the tool returns
    # harness.DENIED and the answer says so; or a call of the model's failed first (code, what it printed), which
    # the conversation holds but training does not teach, and the good call follows.
    denied: bool = False
    failed: tuple[str, str] | None = None


def made_up_word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))


# A question's wording: training's composed phrasings, or (eval-tiny's second figure) the held-out ones.
Ask = Callable[..., str]


def a_number(rng: random.Random, most_digits: int) -> int:
    """A positive whole number of 1 to `most_digits` digits, each length as likely as the next."""
    digits = rng.randint(1, most_digits)
    return rng.randint(1 if digits == 1 else 10 ** (digits - 1), 10**digits - 1)


def arithmetic(rng: random.Random, ask: Ask = training_question) -> Task:
    op = rng.choice(("+", "-", "*", "*", "/", "**", "**2", "**3"))
    a, b = a_number(rng, 5), a_number(rng, 4)  # "17 * 23" as often as "48213 * 9127"
    if op == "/":
        b = max(2, a_number(rng, 3))
    elif op == "**":  # at most 16 digits: an answer the model can copy
        a = rng.randint(2, 99)
        b = rng.randint(2, 16 if a < 10 else 8)
    elif op == "**2":
        a, b = rng.randint(2, 9999), 2
    elif op == "**3":
        a, b = rng.randint(2, 999), 3
    python = "**" if op.startswith("**") else op
    expression = f"{a} {python} {b}"
    value = eval(expression)  # noqa: S307 - two integers the generator chose
    return Task(
        "arithmetic",
        ask(rng, "arithmetic", op=op, a=a, b=b),
        f"print({expression})",
        str(value),
        rng.choice([f"{expression} = {value}.", f"The result is {value}.", f"It is {value}."]),
        thought=f"This needs {expression}; I will run Python.",
    )


def a_word(rng: random.Random) -> str:
    """A word from WORDS or a made-up one, so the model must copy it rather than remember it."""
    return rng.choice(WORDS) if rng.random() < 0.5 else made_up_word(rng)


def letters(rng: random.Random, ask: Ask = training_question) -> Task:
    word = a_word(rng)
    letter = rng.choice(word) if rng.random() < 0.85 else rng.choice(string.ascii_lowercase)
    count = word.count(letter)
    return Task(
        "letters",
        ask(rng, "letters", letter=letter, word=word),
        f'print("{word}".count("{letter}"))',
        str(count),
        rng.choice(
            [
                f'"{word}" has {count} {letter}.',
                f"The letter {letter} appears {count} times in {word}.",
                f"There are {count}.",
            ]
        ),
        thought=f'I will count "{letter}" in "{word}" with Python.',
    )


def length(rng: random.Random, ask: Ask = training_question) -> Task:
    word = a_word(rng)
    return Task(
        "length",
        ask(rng, "length", word=word),
        f'print(len("{word}"))',
        str(len(word)),
        rng.choice([f'"{word}" has {len(word)} letters.', f"It has {len(word)} letters."]),
        thought=f'I will take the length of "{word}" with Python.',
    )


def units(rng: random.Random, ask: Ask = training_question) -> Task:
    unit = rng.choice(sorted(UNITS))
    target, factor, offset = UNITS[unit]
    x = rng.choice([rng.randint(1, 500), round(rng.uniform(0.5, 300), 1)])
    value = round(x * factor + offset, 2)
    code = (
        f"print(round({x} * {factor} + {offset}, 2))"
        if offset
        else f"print(round({x} * {factor}, 2))"
    )
    return Task(
        "units",
        ask(rng, "units", n=x, unit=unit, target=target),
        code,
        str(value),
        rng.choice([f"{x} {unit} is {value} {target}.", f"That is {value} {target}."]),
        thought=f"{unit} to {target}: multiply by {factor}.",
    )


# Of the sorts, the share asked largest first: the rest ask smallest first, half of them naming no order.
DESCENDING_SHARE = 0.3


def sorting(
    rng: random.Random, ask: Ask = training_question, descending_share: float = DESCENDING_SHARE
) -> Task:
    top = rng.choice((20, 100, 999))  # small lists ("3, 1, 2") as well as large
    numbers = [rng.randint(-50 if top > 20 else 0, top) for _ in range(rng.randint(3, 8))]
    reverse = rng.random() < descending_share
    question = ask(rng, "sorting", list=listed(rng, numbers), descending=reverse)
    code = f"print(sorted([{', '.join(map(str, numbers))}]{', reverse=True' if reverse else ''}))"
    value = str(sorted(numbers, reverse=reverse))
    return Task(
        "sorting",
        question,
        code,
        value,
        rng.choice([f"Sorted: {value}.", f"In order: {value}."]),
        thought="I will sort the list with Python.",
    )


def dates(rng: random.Random, ask: Ask = training_question) -> Task:
    first = date(2020, 1, 1) + timedelta(days=rng.randint(0, 2500))
    second = first + timedelta(days=rng.randint(1, 900))
    days = (second - first).days
    code = (
        f"from datetime import date\nprint((date({second.year}, {second.month}, {second.day}) - "
        f"date({first.year}, {first.month}, {first.day})).days)"
    )
    return Task(
        "dates",
        ask(rng, "dates", first=first, second=second),
        code,
        str(days),
        rng.choice([f"There are {days} days between {first} and {second}.", f"{days} days."]),
        thought="A date difference; Python's datetime does it.",
    )


def file_lines(rng: random.Random, ask: Ask = training_question) -> Task:
    name = f"{rng.choice(WORDS[:12] + [made_up_word(rng)])}.txt"
    n = rng.randint(1, 40)
    text = "".join(
        f"{' '.join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))}\n" for _ in range(n)
    )
    code = f'print(len(open("/data/{name}").read().splitlines()))'
    return Task(
        "file_lines",
        ask(rng, "file_lines", name=name),
        code,
        str(n),
        rng.choice([f"{name} has {n} lines.", f"It has {n} lines."]),
        files={name: text},
        thought=f"I will read /data/{name} and count its lines.",
    )


def greeting(rng: random.Random, ask: Ask = training_question) -> Task:
    return Task(
        "greeting",
        ask(rng, "greeting"),
        answer=rng.choice(
            [
                "Hello! Ask me something to compute, count, sort or convert, and I will run Python for it.",
                "Hi! I can run Python to compute things for you. What would you like to know?",
            ]
        ),
        thought="A greeting: no tool is needed.",
    )


def definition(rng: random.Random, ask: Ask = training_question) -> Task:
    term = rng.choice(TERMS)
    return Task(
        "definition",
        ask(rng, "definition", term=term),
        answer=(
            f"I am a tiny model trained for this book, so I cannot explain what {term} means. I can run Python to "
            "compute, count, sort or convert things for you."
        ),
        thought="A definition: I decline politely.",
    )


MAKERS = {
    "arithmetic": arithmetic,
    "letters": letters,
    "length": length,
    "units": units,
    "sorting": sorting,
    "dates": dates,
    "file_lines": file_lines,
    "greeting": greeting,
    "definition": definition,
}
# How often each kind comes up in training: the copying kinds need the most practice.
WEIGHTS = {
    "arithmetic": 3,
    "letters": 4,
    "length": 3,
    "units": 3,
    "sorting": 3,
    "dates": 2,
    "file_lines": 2,
    "greeting": 2,
    "definition": 2,
}


CHECK_TWICE = (
    " Run it twice to be sure.",
    " Check it twice.",
    " Run the code two times to be sure.",
)


def task(
    rng: random.Random,
    kind: str | None = None,
    repeat_share: float = 0.0,
    ask: Ask = training_question,
    descending_share: float = DESCENDING_SHARE,
) -> Task:
    """A task of `kind` (else of a kind drawn by WEIGHTS), worded by `ask`; that share of tool tasks asks to
    check twice, and that share of sorts to sort largest first. A share of 0 draws nothing more from `rng`."""
    kind = kind or rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
    t = sorting(rng, ask, descending_share) if kind == "sorting" else MAKERS[kind](rng, ask)
    if repeat_share and t.code is not None and rng.random() < repeat_share:
        t.question += rng.choice(CHECK_TWICE)
        t.repeat = True
    return t


# The key an assistant message carries (and rows() takes away before rendering) when training must not teach it:
# a failed call the model should not learn to write, only to read and recover from.
UNTRAINED = "_untrained"


def call_message(code: str, thought: str, think, untrained: bool = False) -> dict:
    """An assistant turn that calls run_python with `code`, as SimpleHarness appends it."""
    return {
        "role": "assistant",
        "content": "",
        **think(thought),
        "tool_calls": [
            {"type": "function", "function": {"name": "run_python", "arguments": {"code": code}}}
        ],
        **({UNTRAINED: True} if untrained else {}),
    }


def conversation(t: Task, thinking: bool, thinking_key: str = "reasoning_content") -> list[dict]:
    """The messages after a good run of this task, as SimpleHarness appends them (system prompt not included):
    step n's call answered by a tool message with call id "n.0"."""
    think = (lambda text: {thinking_key: text}) if thinking else (lambda text: {thinking_key: ""})
    messages: list[dict] = [{"role": "user", "content": t.question}]
    if t.code is None:
        return [*messages, {"role": "assistant", "content": t.answer, **think(t.thought)}]
    step = 1
    if (
        t.failed
    ):  # the model's own failed call first: the loop runs it and the model reads the error
        code, printed = t.failed
        messages += [
            call_message(code, t.thought, think, untrained=True),
            {"role": "tool", "name": "run_python", "tool_call_id": "1.0", "content": printed},
        ]
        step = 2
    after_failure = "That failed; I will fix the code and run it again."
    messages += [
        call_message(t.code, after_failure if t.failed else t.thought, think),
        {
            "role": "tool",
            "name": "run_python",
            "tool_call_id": f"{step}.0",
            "content": DENIED if t.denied else t.output,
        },
    ]
    if (
        t.repeat
    ):  # the same call again; SimpleHarness answers a repeat with REPEATED_CALL and runs nothing
        messages += [
            call_message(t.code, "I will run it once more to check.", think),
            {
                "role": "tool",
                "name": "run_python",
                "tool_call_id": f"{step + 1}.0",
                "content": REPEATED_CALL,
            },
        ]
    thought = (
        "The call was denied: I have no result." if t.denied else f"The tool printed {t.output}."
    )
    messages.append({"role": "assistant", "content": t.answer, **think(thought)})
    return messages
