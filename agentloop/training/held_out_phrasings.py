"""Phrasings training never sees: the held-out half of `agentloop models eval-tiny`.

Written separately from phrasing.py, as whole sentences, by someone asking the same things in other ways: other
frames, other word orders, other openings. The values are drawn as in training (held-out seeds) and fill these
templates' slots; only `typed` (lower case, a missing question mark) is shared, since it is how people type, not a
way of asking. tests/test_training_data.py checks that no question phrasing.py composes is one of these, so a
model that answers these has learned the kind of request, not the sentence.
"""

from __future__ import annotations

import random

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
