"""Synthetic tool-use conversations for training the tiny models, and the answers that check them.

Each `Task` is one question with what a good run does: the code run_python should get, what that code prints
(computed here in plain Python, as the sandbox would print it), and the final answer, which must state that
result. `conversation()` turns a task into the messages SimpleHarness would hold at the end of the run, so they
can be rendered through the model's own chat template exactly as the loop renders them.

Kinds that need run_python: arithmetic with large numbers, letters in a word (made-up words too, so the model
must copy rather than memorise), unit conversion, sorting a list, a date difference, and counting the lines of a
file in /data. Kinds that need no tool: greetings, and definitions the model is told to decline politely.
Asked to check twice, a tool task becomes a run where the model repeats its call and the loop refuses the
repeat (a later training phase only: see `task`).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from datetime import date, timedelta

from agentloop.harnesses.simple_harness import REPEATED_CALL

TOOL_KINDS = ("arithmetic", "letters", "units", "sorting", "dates", "file_lines")
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
    repeat: bool = (
        False  # asked to check twice: the model repeats its call and the loop refuses the repeat
    )


def made_up_word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10)))


def arithmetic(rng: random.Random) -> Task:
    a, b = rng.randint(100, 99999), rng.randint(10, 9999)
    op, sym = rng.choice([("*", "×"), ("+", "+"), ("-", "-"), ("**", "to the power of")])
    if op == "**":
        a, b = rng.randint(2, 99), rng.randint(5, 30)
    value = eval(f"{a} {op} {b}")  # noqa: S307 - two integers the generator chose
    question = rng.choice(
        [
            f"What is {a} {op} {b}?",
            f"Compute {a} {op} {b}.",
            f"Calculate {a} {sym} {b}.",
            f"What do you get for {a} {op} {b}?",
        ]
    )
    return Task(
        "arithmetic",
        question,
        f"print({a} {op} {b})",
        str(value),
        rng.choice([f"{a} {op} {b} = {value}.", f"The result is {value}.", f"It is {value}."]),
        thought=f"This needs {a} {op} {b}; I will run Python.",
    )


def letters(rng: random.Random) -> Task:
    word = rng.choice(WORDS) if rng.random() < 0.5 else made_up_word(rng)
    letter = rng.choice(word) if rng.random() < 0.85 else rng.choice(string.ascii_lowercase)
    count = word.count(letter)
    question = rng.choice(
        [
            f'How many times does the letter "{letter}" appear in "{word}"?',
            f"How many {letter}'s are in the word {word}?",
            f'Count the letter {letter} in "{word}".',
        ]
    )
    return Task(
        "letters",
        question,
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


def units(rng: random.Random) -> Task:
    unit = rng.choice(sorted(UNITS))
    target, factor, offset = UNITS[unit]
    x = rng.choice([rng.randint(1, 500), round(rng.uniform(0.5, 300), 1)])
    value = round(x * factor + offset, 2)
    code = (
        f"print(round({x} * {factor} + {offset}, 2))"
        if offset
        else f"print(round({x} * {factor}, 2))"
    )
    question = rng.choice(
        [
            f"Convert {x} {unit} to {target}.",
            f"How many {target} is {x} {unit}?",
            f"What is {x} {unit} in {target}?",
        ]
    )
    return Task(
        "units",
        question,
        code,
        str(value),
        rng.choice([f"{x} {unit} is {value} {target}.", f"That is {value} {target}."]),
        thought=f"{unit} to {target}: multiply by {factor}.",
    )


def sorting(rng: random.Random) -> Task:
    numbers = [rng.randint(-50, 999) for _ in range(rng.randint(3, 8))]
    listed = ", ".join(map(str, numbers))
    reverse = rng.random() < 0.3
    question = (
        f"Sort these numbers from largest to smallest: {listed}."
        if reverse
        else rng.choice(
            [f"Sort these numbers: {listed}.", f"Put {listed} in order from smallest to largest."]
        )
    )
    code = f"print(sorted([{listed}]{', reverse=True' if reverse else ''}))"
    value = str(sorted(numbers, reverse=reverse))
    return Task(
        "sorting",
        question,
        code,
        value,
        rng.choice([f"Sorted: {value}.", f"In order: {value}."]),
        thought="I will sort the list with Python.",
    )


def dates(rng: random.Random) -> Task:
    first = date(2020, 1, 1) + timedelta(days=rng.randint(0, 2500))
    second = first + timedelta(days=rng.randint(1, 900))
    days = (second - first).days
    question = rng.choice(
        [
            f"How many days are there between {first} and {second}?",
            f"How many days from {first} to {second}?",
        ]
    )
    code = (
        f"from datetime import date\nprint((date({second.year}, {second.month}, {second.day}) - "
        f"date({first.year}, {first.month}, {first.day})).days)"
    )
    return Task(
        "dates",
        question,
        code,
        str(days),
        rng.choice([f"There are {days} days between {first} and {second}.", f"{days} days."]),
        thought="A date difference; Python's datetime does it.",
    )


def file_lines(rng: random.Random) -> Task:
    name = f"{rng.choice(WORDS[:12] + [made_up_word(rng)])}.txt"
    n = rng.randint(1, 40)
    text = "".join(
        f"{' '.join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))}\n" for _ in range(n)
    )
    question = rng.choice(
        [
            f"How many lines are in /data/{name}?",
            f"Count the lines of the file {name}.",
            f"How many lines does {name} have?",
        ]
    )
    code = f'print(len(open("/data/{name}").read().splitlines()))'
    return Task(
        "file_lines",
        question,
        code,
        str(n),
        rng.choice([f"{name} has {n} lines.", f"It has {n} lines."]),
        files={name: text},
        thought=f"I will read /data/{name} and count its lines.",
    )


def greeting(rng: random.Random) -> Task:
    question = rng.choice(
        [
            "Hi!",
            "Hello.",
            "Hello there!",
            "Good morning!",
            "Hey, how are you?",
            "Thanks!",
            "Hi, who are you?",
            "Good evening.",
        ]
    )
    return Task(
        "greeting",
        question,
        answer=rng.choice(
            [
                "Hello! Ask me something to compute, count, sort or convert, and I will run Python for it.",
                "Hi! I can run Python to compute things for you. What would you like to know?",
            ]
        ),
        thought="A greeting: no tool is needed.",
    )


def definition(rng: random.Random) -> Task:
    term = rng.choice(TERMS)
    question = rng.choice([f"What does {term} mean?", f"Define {term}.", f"Explain {term} to me."])
    return Task(
        "definition",
        question,
        answer=(
            f"I am a tiny model trained for this book, so I cannot explain what {term} means. I can run Python to "
            "compute, count, sort or convert things for you."
        ),
        thought="A definition: I decline politely.",
    )


MAKERS = {
    "arithmetic": arithmetic,
    "letters": letters,
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
    "units": 3,
    "sorting": 3,
    "dates": 2,
    "file_lines": 2,
    "greeting": 1,
    "definition": 1,
}


CHECK_TWICE = (
    " Run it twice to be sure.",
    " Check it twice.",
    " Run the code two times to be sure.",
)


def task(rng: random.Random, kind: str | None = None, repeat_share: float = 0.0) -> Task:
    """A task of `kind` (else of a kind drawn by WEIGHTS); that share of tool tasks asks to check twice. A share
    of 0 draws nothing more, so phases trained without repeats see exactly the data they saw before."""
    kind = kind or rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
    t = MAKERS[kind](rng)
    if repeat_share and t.code is not None and rng.random() < repeat_share:
        t.question += rng.choice(CHECK_TWICE)
        t.repeat = True
    return t


def conversation(t: Task, thinking: bool, thinking_key: str = "reasoning_content") -> list[dict]:
    """The messages after a good run of this task, as SimpleHarness appends them (system prompt not included)."""
    think = (lambda text: {thinking_key: text}) if thinking else (lambda text: {thinking_key: ""})
    messages: list[dict] = [{"role": "user", "content": t.question}]
    if t.code is not None:
        messages += [
            {
                "role": "assistant",
                "content": "",
                **think(t.thought),
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": "run_python", "arguments": {"code": t.code}},
                    }
                ],
            },
            {"role": "tool", "name": "run_python", "tool_call_id": "1.0", "content": t.output},
        ]
        if t.repeat:  # the same call again; SimpleHarness answers a repeat with REPEATED_CALL and runs nothing
            messages += [
                {
                    "role": "assistant",
                    "content": "",
                    **think("I will run it once more to check."),
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "run_python", "arguments": {"code": t.code}},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "name": "run_python",
                    "tool_call_id": "2.0",
                    "content": REPEATED_CALL,
                },
            ]
        messages.append(
            {"role": "assistant", "content": t.answer, **think(f"The tool printed {t.output}.")}
        )
    else:
        messages.append({"role": "assistant", "content": t.answer, **think(t.thought)})
    return messages
