"""Phrasings training never sees: the held-out half of `agentloop models eval-tiny`.

Written separately from phrasing.py, as whole sentences, by someone asking the same things in other ways: other
frames, other word orders, other openings. The values are drawn as in training (held-out seeds) and fill these
templates' slots; only `typed` (lower case, a missing question mark) is shared, since it is how people type, not a
way of asking. tests/test_training_data.py checks that no question phrasing.py composes is one of these, so a
model that answers these has learned the kind of request, not the sentence.
"""

from __future__ import annotations

import random

from agentloop.training.conversations import Task
from agentloop.training.phrasing import UNIT_NAMES, typed

HELD_OUT = {
    "+": (
        "I'd like to know what {a} plus {b} is.",
        "Do you know {a} + {b}?",
        "If I add {a} and {b}, what do I get?",
        "Any idea what {a} plus {b} makes?",
        "Give me the answer to {a} + {b}",
        "{a} plus {b} makes what?",
    ),
    "-": (
        "I'd like to know what {a} minus {b} is.",
        "Do you know {a} - {b}?",
        "If I subtract {b} from {a}, what is left?",
        "Any idea what {a} minus {b} makes?",
        "Give me the answer to {a} - {b}",
        "{a} minus {b} makes what?",
    ),
    "*": (
        "I'd like to know what {a} times {b} is.",
        "Do you know {a} * {b}?",
        "If I multiply {a} by {b}, what do I get?",
        "Any idea what {a} times {b} makes?",
        "Give me the answer to {a} * {b}",
        "{a} multiplied by {b} makes what?",
    ),
    "/": (
        "I'd like to know what {a} divided by {b} is.",
        "Do you know {a} / {b}?",
        "If I divide {a} by {b}, what do I get?",
        "Any idea what {a} divided by {b} makes?",
        "Give me the answer to {a} / {b}",
    ),
    "**": (
        "I'd like to know what {a} to the power of {b} is.",
        "Do you know {a} ** {b}?",
        "Any idea what {a}^{b} makes?",
        "Give me the answer to {a} ** {b}",
    ),
    "**2": (
        "I'd like to know what {a} squared is.",
        "Do you know {a} squared?",
        "Any idea what {a}^2 makes?",
    ),
    "**3": (
        "I'd like to know what {a} cubed is.",
        "Do you know {a} cubed?",
        "Any idea what {a}^3 makes?",
    ),
    "letters": (
        "I wonder how many {letter}'s there are in {word}.",
        "In {word}, how many times do you see {letter}?",
        "Could you count every {letter} in {word}?",
        "{word} - how many {letter}'s?",
        "What's the number of {letter}'s in {word}?",
    ),
    "length": (
        "I wonder how many letters {word} has.",
        "What would the length of {word} be?",
        "{word} - how many letters?",
        "Could you count the letters of {word}?",
    ),
    "units": (
        "I'd like {n} {unit} in {target}.",
        "Do you know what {n} {unit} is in {target}?",
        "If I have {n} {unit}, how many {target} is that?",
        "{n} {unit} - how many {target}?",
        "What would {n} {unit} be in {target}?",
    ),
    "sorting": (
        "I'd like {list} sorted{order}.",
        "Could you sort {list} for me{order}?",
        "What is {list} sorted{order}?",
        "Rearrange {list}{order}.",
        "{list} - in order{order}, please.",
    ),
    "dates": (
        "I wonder how many days lie between {first} and {second}.",
        "From {first} to {second} is how many days?",
        "If it is {first} today, how many days until {second}?",
        "What's the number of days between {first} and {second}?",
    ),
    "file_lines": (
        "I wonder how many lines {file} has.",
        "{file} - how many lines?",
        "Could you count the lines in {file} for me?",
        "What's the number of lines in {file}?",
    ),
    "greeting": (
        "Hi there, nice to meet you!",
        "Good day!",
        "Hello, how's it going?",
        "Hey! Thanks for the help.",
        "Morning!",
        "Howdy!",
    ),
    "definition": (
        "I'd like to know what {term} means.",
        "Could you define {term} for me?",
        "What is meant by {term}?",
        "Do you know what {term} is?",
    ),
}
ASCENDING = ("", " from smallest to largest")
DESCENDING = (" from largest to smallest", " with the biggest first")


def held_out_question(rng: random.Random, kind: str, **values) -> str:
    """A question of `kind` in a held-out phrasing, with the same values training's would carry."""
    templates = HELD_OUT[values.pop("op")] if kind == "arithmetic" else HELD_OUT[kind]
    if "name" in values:
        values["file"] = rng.choice(("/data/{name}", "{name}")).format(name=values["name"])
    if "descending" in values:
        values["order"] = rng.choice(DESCENDING if values["descending"] else ASCENDING)
    for key in ("unit", "target"):
        if key in values:
            values[key] = rng.choice(UNIT_NAMES[values[key]])
    return typed(rng, rng.choice(templates).format(**values))


# The third set: twenty questions as a reader types them into the panel, fixed (the first four like those the issue
# that asked for the held-out phrasings tried in the panel and saw answered wrong). Written apart from both sets'
# templates, though a reader's words may happen to be a training sentence ("What is 17 * 23?"): this set measures
# what a reader meets.
# (question, code a good run sends, what it prints); no code: answered without a tool.
READER_QUESTIONS = (
    ("What is 17 * 23?", "print(17 * 23)", "391"),
    ("How many r's are in strawberry?", 'print("strawberry".count("r"))', "3"),
    ("what's 1000 minus 1", "print(1000 - 1)", "999"),
    (
        "Sort 5, 3, 9 and 1 from largest to smallest.",
        "print(sorted([5, 3, 9, 1], reverse=True))",
        "[9, 5, 3, 1]",
    ),
    ("whats 12 times 12", "print(12 * 12)", "144"),
    ("how long is the word elephant?", 'print(len("elephant"))', "8"),
    ("Can you sort 9, 2, 7 and 4 for me?", "print(sorted([9, 2, 7, 4]))", "[2, 4, 7, 9]"),
    ("2 to the power of 8?", "print(2 ** 8)", "256"),
    ("What is 144 divided by 12?", "print(144 / 12)", "12.0"),
    ("convert 10 miles to km", "print(round(10 * 1.609344, 2))", "16.09"),
    ("How many e's in committee", 'print("committee".count("e"))', "2"),
    (
        "How many days between 2024-01-01 and 2024-03-01?",
        "from datetime import date\nprint((date(2024, 3, 1) - date(2024, 1, 1)).days)",
        "60",
    ),
    ("add 250 and 750", "print(250 + 750)", "1000"),
    ("how much is 15 squared", "print(15 ** 2)", "225"),
    ("how many pounds is 5 kg", "print(round(5 * 2.20462, 2))", "11.02"),
    ("how many letters does mississippi have", 'print(len("mississippi"))', "11"),
    ("hello there!", None, ""),
    ("thanks!", None, ""),
    ("What does serendipity mean?", None, ""),
    ("Good morning, who are you?", None, ""),
)


def reader_tasks() -> list[Task]:
    """The reader questions as tasks the evaluation runs (no answer text: the evaluation reads the tool's)."""
    return [Task("reader", q, code, output) for q, code, output in READER_QUESTIONS]


# A conversation's later questions (sessions.py) in phrasings training never sees: the held-out half of eval-tiny's
# conversation sets. Same kinds and slots as phrasing.FOLLOW_UP_FRAMES.
HELD_OUT_FOLLOW_UPS = {
    "times": (
        "Could you multiply that result by {k}?",
        "{k} times that?",
        "And if I multiply it by {k}?",
    ),
    "plus": ("Could you add {k} to that result?", "{k} added to that?", "And if I add {k} to it?"),
    "minus": (
        "Could you subtract {k} from that result?",
        "That less {k}?",
        "And if I subtract {k} from it?",
    ),
    "largest_first": (
        "Could you reverse it, largest at the front?",
        "I'd like them biggest to smallest now.",
    ),
    "smallest_first": (
        "Could you reverse it, smallest at the front?",
        "I'd like them smallest to biggest now.",
    ),
    "other_word": ("I'd like the same for {word}.", "Could you do {word} as well?", "{word} too?"),
    "other_amount": ("I'd like {n} {unit} as well.", "Could you do {n} {unit} too?"),
    "retry": ("I'll approve it this time.", "Run it once more, it is allowed now."),
    "write": ("I'd like {list} kept in {file}.", "Could you write {list} to {file} for me?"),
    "read_sum": ("I'd like the total of the numbers in {file}.", "Could you total up {file}?"),
    "read_sorted": (
        "I'd like the numbers of {file} in order.",
        "Could you order what {file} holds?",
    ),
    "read_largest": (
        "I'd like the biggest number in {file}.",
        "Could you find the maximum in {file}?",
    ),
}


def held_out_follow_up(rng: random.Random, kind: str, **values) -> str:
    """A later question of `kind` in a held-out phrasing, with the values training's would carry."""
    if "name" in values:
        values["file"] = rng.choice(("/data/{name}", "{name}")).format(name=values["name"])
    if "list" in values:
        values["list"] = ", ".join(map(str, values["list"]))
    if "unit" in values:
        values["unit"] = rng.choice(UNIT_NAMES[values["unit"]])
    return typed(rng, rng.choice(HELD_OUT_FOLLOW_UPS[kind]).format(**values))
