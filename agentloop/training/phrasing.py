"""How a question of each kind is worded in training: composed from parts, so that the combinations far
outnumber what a tiny model can memorise, and the model learns to find the numbers or the word wherever they
stand in the sentence.

A question is a frame ("What is {x}?", "{x}, please") holding a core that carries the values ("{a} times {b}",
"{b} multiplied by {a}"), inside an opener and a closer (polite, casual, or none), then lower-cased or left
without its closing mark now and then, as people type. The held-out phrasings that measure whether the model
understood rather than remembered are in held_out_phrasings.py, written separately and never drawn here
(tests/test_training_data.py checks that no question composed here is one of them).
Left out: the values, the code and the answers (conversations.py).
"""

from __future__ import annotations

import random

# Around the whole question; "" more often than not.
OPENERS = ("",) * 6 + (
    "Please ",
    "Hey, ",
    "hi! ",
    "Quick question: ",
    "Can you tell me ",
    "Could you tell me ",
    "I need to know ",
    "Tell me ",
    "Help me out: ",
    "OK, ",
    "So, ",
    "Hello, ",
    "Excuse me, ",
    "Hey there, ",
)
CLOSERS = ("",) * 6 + (
    " please",
    " thanks",
    " Thanks!",
    " for me",
    " quickly",
    " thank you",
    " now",
)

ARITHMETIC_CORES = {  # the Python operator -> the ways to say it
    "+": (
        "{a} + {b}",
        "{a} plus {b}",
        "{a}+{b}",
        "the sum of {a} and {b}",
        "{a} and {b} added together",
    ),
    "-": ("{a} - {b}", "{a} minus {b}", "{a}-{b}", "{b} subtracted from {a}", "{a} take away {b}"),
    "*": (
        "{a} * {b}",
        "{a} times {b}",
        "{a} x {b}",
        "{a} × {b}",
        "{a} multiplied by {b}",
        "the product of {a} and {b}",
        "{a}*{b}",
    ),
    "/": ("{a} / {b}", "{a} divided by {b}", "{a}/{b}", "{a} over {b}", "{a} ÷ {b}"),
    "**": (
        "{a} ** {b}",
        "{a} to the power of {b}",
        "{a}^{b}",
        "{a} raised to {b}",
        "{a} to the {b}th power",
    ),
    "**2": ("{a} squared", "the square of {a}", "{a} ** 2", "{a}^2"),
    "**3": ("{a} cubed", "the cube of {a}", "{a} ** 3", "{a}^3"),
}

FRAMES = {
    "arithmetic": (
        "What is {x}?",
        "what's {x}",
        "Calculate {x}.",
        "Compute {x}.",
        "How much is {x}?",
        "Work out {x}.",
        "{x} = ?",
        "{x}?",
        "{x}",
        "What do you get for {x}?",
        "Find {x}.",
        "Solve {x}.",
        "What does {x} come to?",
        "Evaluate {x}.",
        "Whats {x}?",
        "What is the value of {x}?",
    ),
    "letters": (
        "How many {letter}'s are in {word}?",
        "how many {letter}s in {word}",
        "Count the {letter}'s in {word}.",
        'How many times does "{letter}" appear in {word}?',
        "How many times does the letter {letter} appear in {word}?",
        "count the letter {letter} in {word}",
        "Number of {letter}s in {word}?",
        "How often does {letter} occur in {word}?",
        "How many {letter} does {word} have?",
        "how many times is {letter} in {word}",
        'How many "{letter}" are in {word}?',
        "Count how many {letter}'s {word} has.",
    ),
    "length": (
        "How long is {word}?",
        "How many letters are in {word}?",
        "how many letters in {word}",
        "How many characters does {word} have?",
        "What is the length of {word}?",
        "Length of {word}?",
        "Count the letters in {word}.",
        "How many letters does {word} have?",
        "how long is {word}",
    ),
    "units": (
        "Convert {n} {unit} to {target}.",
        "convert {n} {unit} into {target}",
        "What is {n} {unit} in {target}?",
        "what's {n} {unit} in {target}",
        "{n} {unit} in {target}?",
        "{n} {unit} to {target}",
        "How many {target} is {n} {unit}?",
        "how many {target} in {n} {unit}",
        "{n} {unit} is how many {target}?",
        "Change {n} {unit} to {target}.",
        "How much is {n} {unit} in {target}?",
        "Express {n} {unit} in {target}.",
    ),
    "sorting": (
        "Sort {list}{order}.",
        "sort {list}{order}",
        "Sort these numbers{order}: {list}.",
        "Put {list} in order{order}.",
        "Order these{order}: {list}.",
        "Arrange {list}{order}.",
        "{list}: sort them{order}.",
        "Can you order {list}{order}?",
        "Sort the list {list}{order}.",
        "Put these in order{order}: {list}",
    ),
    "dates": (
        "How many days are there between {first} and {second}?",
        "How many days from {first} to {second}?",
        "how many days between {first} and {second}",
        "Number of days from {first} until {second}?",
        "Count the days between {first} and {second}.",
        "Days from {first} to {second}?",
        "How many days separate {first} and {second}?",
        "How many days is it from {first} to {second}?",
    ),
    "file_lines": (
        "How many lines are in {file}?",
        "Count the lines of {file}.",
        "How many lines does {file} have?",
        "how many lines in {file}",
        "What is the line count of {file}?",
        "Number of lines in {file}?",
        "Count the lines in {file}.",
        "how many lines does {file} have",
    ),
    "greeting": (
        "Hi!",
        "Hello.",
        "Hello there!",
        "Good morning!",
        "Hey, how are you?",
        "Thanks!",
        "Hi, who are you?",
        "Good evening.",
        "hi",
        "hello",
        "hey",
        "Hiya!",
        "yo",
        "thank you",
        "What's up?",
        "How are you?",
        "Who are you?",
        "Hey there.",
        "Good afternoon!",
        "thanks a lot",
    ),
    "definition": (
        "What does {term} mean?",
        "Define {term}.",
        "Explain {term} to me.",
        "What is {term}?",
        "what's {term}",
        "Tell me about {term}.",
        "Meaning of {term}?",
        "define {term}",
        "What's the meaning of {term}?",
        "Can you explain {term}?",
    ),
}
# How a value may be written inside a frame.
WORD_FORMS = ("{w}", '"{w}"', "the word {w}", 'the word "{w}"')
FILE_FORMS = ("/data/{name}", "{name}", "the file {name}", "the file /data/{name}")
ASCENDING = ("",) * 3 + (
    " from smallest to largest",
    " in ascending order",
    " smallest first",
    " from low to high",
)
DESCENDING = (
    " from largest to smallest",
    " in descending order",
    " biggest first",
    " from high to low",
    " largest first",
    " in reverse order",
)
UNIT_NAMES = {  # a unit as UNITS (conversations.py) keys it -> the names a question may use
    "km": ("km", "kilometers", "kilometres"),
    "miles": ("miles", "mi"),
    "kg": ("kg", "kilograms", "kilos"),
    "pounds": ("pounds", "lbs", "lb"),
    "meters": ("meters", "metres", "m"),
    "feet": ("feet", "ft"),
    "°C": ("°C", "degrees Celsius", "Celsius", "C"),
    "°F": ("°F", "degrees Fahrenheit", "Fahrenheit", "F"),
    "liters": ("liters", "litres", "L"),
    "gallons": ("gallons", "gal"),
}


def listed(rng: random.Random, numbers: list[int]) -> str:
    """A list as people write it: commas, commas and a final "and", or spaces."""
    words = [str(n) for n in numbers]
    style = rng.random()
    if style < 0.6:
        return ", ".join(words)
    if style < 0.85:
        return ", ".join(words[:-1]) + " and " + words[-1]
    return " ".join(words)


def typed(rng: random.Random, question: str) -> str:
    """As people type: now and then all lower case, or without the closing mark."""
    if rng.random() < 0.2:
        question = question.lower()
    if rng.random() < 0.15:
        question = question.rstrip("?.!")
    return question


def wrap(rng: random.Random, question: str) -> str:
    """An opener and a closer around a question; after an opener the question's first letter is lower case."""
    opener, closer = rng.choice(OPENERS), rng.choice(CLOSERS)
    if opener and question[:1].isupper() and not question[1:2].isupper():
        question = question[0].lower() + question[1:]
    if closer:
        end = question[-1] if question[-1:] in "?.!" else ""
        question = question[: len(question) - len(end)] + closer + end
    return opener + question


def training_question(rng: random.Random, kind: str, **values) -> str:
    """A question of `kind` as training asks it: a frame drawn for the kind, its values in one of their forms,
    wrapped and typed. `values` are those the kind's frames name (arithmetic's `x` is filled from `op`)."""
    if kind == "arithmetic":
        values["x"] = rng.choice(ARITHMETIC_CORES[values.pop("op")]).format(**values)
    if "word" in values:
        values["word"] = rng.choice(WORD_FORMS).format(w=values["word"])
    if "name" in values:
        values["file"] = rng.choice(FILE_FORMS).format(name=values["name"])
    if "descending" in values:
        values["order"] = rng.choice(DESCENDING if values["descending"] else ASCENDING)
    for key in ("unit", "target"):
        if key in values:
            values[key] = rng.choice(UNIT_NAMES[values[key]])
    return typed(rng, wrap(rng, rng.choice(FRAMES[kind]).format(**values)))
