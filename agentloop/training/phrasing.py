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
    "I'm curious: ",
    "Question: ",
    "Quick one: ",
    "Just wondering, ",
    "I want to know ",
    "Would you tell me ",
    "Mind telling me ",
    "Do you happen to know ",
    "Any chance you can tell me ",
    "I have a question: ",
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
ARITHMETIC_REQUESTS = {  # the same, asked as something to do: these fill the "arithmetic_request" frames
    "+": ("add {a} and {b}", "add {b} to {a}", "sum {a} and {b}", "add up {a} and {b}"),
    "-": (
        "subtract {b} from {a}",
        "take {b} away from {a}",
        "take {b} from {a}",
        "deduct {b} from {a}",
    ),
    "*": ("multiply {a} by {b}", "multiply {a} and {b}", "multiply {a} with {b}"),
    "/": ("divide {a} by {b}", "split {a} by {b}", "divide {a} through {b}"),
    "**": ("raise {a} to the power {b}", "raise {a} to {b}", "take {a} to the power of {b}"),
    "**2": ("square {a}", "raise {a} to the power 2", "take the square of {a}"),
    "**3": ("cube {a}", "raise {a} to the power 3", "take the cube of {a}"),
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
        "what {x} is",
        "what {x} equals",
        "the result of {x}",
        "how much {x} is",
        "{x} equals what?",
        "{x} is how much?",
        "Result of {x}?",
        "Answer: {x}",
        "{x}, what is it?",
    ),
    "arithmetic_request": (
        "{v}.",
        "Please {v}.",
        "{v} for me",
        "Can you {v}?",
        "Could you {v}?",
        "I need you to {v}.",
        "{v} and tell me the result.",
        "What do I get if I {v}?",
        "What happens if you {v}?",
        "What's the result when you {v}?",
        "Let's {v}.",
        "Try to {v}.",
        "how to {v}",
        "When you {v}, what comes out?",
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
        "{word}: how many {letter}'s?",
        "{word} has how many {letter}'s?",
        "In {word}, count the {letter}s.",
        "In {word}, how many {letter}'s are there?",
        "For {word}, how many {letter}s?",
        "Take {word} and count the {letter}'s.",
        "Given {word}, how many times does {letter} appear?",
        "Look at {word}: how many {letter}'s?",
        "how many {letter}'s does {word} contain",
        "{letter}'s in {word}?",
        "the number of {letter}s in {word}",
        "how many {letter}'s {word} has",
        "{word}, count the {letter}s",
        "How many of the letter {letter} are in {word}?",
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
        "{word}: how many letters?",
        "{word} has how many letters?",
        "In {word}, how many letters are there?",
        "For {word}, what is the length?",
        "Take {word}. How long is it?",
        "the length of {word}",
        "how many letters {word} has",
        "How many letters make up {word}?",
        "What's the letter count of {word}?",
        "Count the characters in {word}.",
        "How many characters are in {word}?",
        "{word}, how long is it?",
        "Give me the length of {word}.",
        "how many characters {word} has",
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
        "{n} {unit} equals how many {target}?",
        "I have {n} {unit}. What is that in {target}?",
        "Turn {n} {unit} into {target}.",
        "{n} {unit} converted to {target}?",
        "what {n} {unit} is in {target}",
        "How many {target} are {n} {unit}?",
        "{n} {unit}: how much is that in {target}?",
        "In {target}, how much is {n} {unit}?",
        "the {target} in {n} {unit}",
        "I've got {n} {unit}; how many {target} is it?",
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
        "{list}: put them in order{order}.",
        "Here are some numbers: {list}. Sort them{order}.",
        "Take {list} and sort them{order}.",
        "Given {list}, sort them{order}.",
        "Numbers: {list}. Order them{order}.",
        "{list}, sorted{order}?",
        "how {list} looks sorted{order}",
        "Sort{order}: {list}",
        "{list} in order{order}?",
        "Order {list}{order}, please.",
        "I need {list} sorted{order}.",
        "Could you put {list} in order{order}?",
        "Line up {list}{order}.",
        "What does {list} look like in order{order}?",
        "{list} - sort them{order}.",
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
        "Between {first} and {second}, how many days?",
        "{first} to {second}: how many days?",
        "Days between {first} and {second}",
        "the number of days from {first} to {second}",
        "how many days {first} and {second} are apart",
        "How far apart are {first} and {second} in days?",
        "Starting {first}, how many days until {second}?",
        "{first} and {second}: days between them?",
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
        "{file}: how many lines?",
        "For {file}, count the lines.",
        "In {file}, how many lines are there?",
        "the number of lines in {file}",
        "how many lines {file} has",
        "Open {file} and count its lines.",
        "Line count for {file}?",
        "Take {file} and tell me how many lines it has.",
        "{file} has how many lines?",
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
        "what {term} means",
        "the meaning of {term}",
        "{term}: what does it mean?",
        "{term}, meaning?",
        "What is the definition of {term}?",
        "Explain what {term} is.",
        "Describe {term}.",
        "What's {term} all about?",
        "Give me a definition of {term}.",
        "{term}?",
        "What do people mean by {term}?",
        "Is there a simple way to explain {term}?",
        "What do you mean by {term}?",
        "{term} means what?",
        "What does the word {term} mean?",
        "Tell me what is meant when someone says {term}.",
        "What is the meaning behind {term}?",
        "{term} - what's the meaning?",
        "Could you tell me what {term} means?",
    ),
}
# A greeting is a salutation and a tail ("Hey there" + ", what can you do?"), or one of the lines said whole.
SALUTATIONS = (
    "Hi",
    "Hello",
    "Hey",
    "Hey there",
    "Hi there",
    "Hello there",
    "Good morning",
    "Good evening",
    "Good afternoon",
    "Hiya",
    "Greetings",
    "yo",
    "Heya",
    "Hi again",
    "Hello again",
    "Evening",
)
GREETING_TAILS = ("!", ".", "", "!!") * 3 + (
    ", how are you?",
    "! How are you doing?",
    ", what can you do?",
    ", who are you?",
    "! Nice to see you.",
    ", thanks!",
    "! Thank you so much.",
    ", how's your day?",
    " :)",
    ", anyone there?",
    ", what are you?",
    "! Are you there?",
    ", how have you been?",
    "! Good to see you.",
    # the letters kind's cues ("how", "'s", "it's") in sentences that ask for nothing to count
    ", how's everything?",
    "! How's life?",
    ", how's your week been?",
    ", what's new?",
    "! What's going on today?",
    ", it's me again.",
    "! It's nice to be here.",
    ", how's the weather where you are?",
    "! How's your evening going?",
    # thanks of many shapes
    ", thanks for that!",
    "! Thanks so much for all of it.",
    ", thank you for answering.",
    "! Many thanks.",
    "! Thanks for helping me out.",
    ". Thanks, that was useful.",
)
SAID_WHOLE = (
    "Thanks!",
    "thank you",
    "thanks a lot",
    "What's up?",
    "How are you?",
    "Who are you?",
    "What can you do?",
    "Thank you for your help.",
    "Nice to meet you.",
    "How are you today?",
    "Are you a robot?",
    "What's your name?",
    "Cheers!",
    "Bye!",
    "See you later.",
    "Good night!",
    "ok thanks",
    "Great, thanks.",
    "How's it been?",
    "Thanks for helping!",
    "It's me again.",
    "How's your day going?",
    "What's new?",
    "Thanks, that's great.",
    "That's all, thanks!",
    "Thanks for the answer.",
    "It's been a long day.",
    "How's everything?",
    "Thank you, that helps a lot.",
    "What's going on?",
)
# How a value may be written inside a frame.
WORD_FORMS = ("{w}", '"{w}"', "the word {w}", 'the word "{w}"')
FILE_FORMS = ("/data/{name}", "{name}", "the file {name}", "the file /data/{name}")
# Half the ascending questions name no order: a list asked "in order" with no direction is sorted smallest first.
ASCENDING = ("",) * 8 + (
    " from smallest to largest",
    " in ascending order",
    " smallest first",
    " from low to high",
    " in increasing order",
    " ascending",
    " lowest first",
    " small to big",
)
DESCENDING = (
    " from largest to smallest",
    " in descending order",
    " biggest first",
    " from high to low",
    " largest first",
    " in reverse order",
    " in decreasing order",
    " descending",
    " biggest to smallest",
    " high to low",
    " with the highest first",
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


def greeting(rng: random.Random) -> str:
    """A greeting: a salutation with a tail, or now and then a line said whole."""
    if rng.random() < 0.3:
        return rng.choice(SAID_WHOLE)
    return rng.choice(SALUTATIONS) + rng.choice(GREETING_TAILS)


def training_question(rng: random.Random, kind: str, plain: bool = False, **values) -> str:
    """A question of `kind` as training asks it: a frame drawn for the kind, its values in one of their forms,
    wrapped and typed; a greeting is `greeting`'s, typed. `values` are those the kind's frames name
    (arithmetic's core `x`, or its request `v`, is filled from `op`). `plain`: every table's first form and
    nothing around it ("What is 17 * 23?"), so the values always stand in the same place: for a first phase
    from random weights, which then has only copying to learn, not finding."""
    if kind == "greeting":
        return greeting(rng) if plain else typed(rng, greeting(rng))
    pick = (lambda forms: forms[0]) if plain else rng.choice
    if kind == "arithmetic":
        op = values.pop("op")
        if (
            not plain and rng.random() < 0.3
        ):  # asked as something to do: "multiply 17 by 23", in frames of its own
            kind, values["v"] = (
                "arithmetic_request",
                rng.choice(ARITHMETIC_REQUESTS[op]).format(**values),
            )
        else:
            values["x"] = pick(ARITHMETIC_CORES[op]).format(**values)
    if "word" in values:
        values["word"] = pick(WORD_FORMS).format(w=values["word"])
    if "name" in values:
        values["file"] = pick(FILE_FORMS).format(name=values["name"])
    if "descending" in values:
        values["order"] = pick(DESCENDING if values["descending"] else ASCENDING)
    for key in ("unit", "target"):
        if key in values:
            values[key] = pick(UNIT_NAMES[values[key]])
    question = pick(FRAMES[kind]).format(**values)
    return question if plain else typed(rng, wrap(rng, question))


def plain_question(rng: random.Random, kind: str, **values) -> str:
    """`training_question` in its one fixed wording."""
    return training_question(rng, kind, plain=True, **values)


# ---- A conversation's later questions (sessions.py): follow-ups, retries, files written and read back ----------
# A request to save numbers, composed as first questions are: a verb, the numbers, a word that puts the file
# after them, or the file named first. With six whole sentences instead, agent-qwen3_5 saved the numbers in 15 of
# 20 conversations worded as training words them and in none of 20 worded otherwise: it had learned the
# sentences, not the request. SAVE_OPENERS go before and CLOSERS after (follow_up_question).
SAVE_VERBS = {  # the verb -> the words that may put the file after the numbers
    "save": ("to", "in", "into"),
    "write": ("to", "into", "in"),
    "put": ("in", "into"),
    "store": ("in",),
    "keep": ("in",),
    "record": ("in",),
    "place": ("in", "into"),
    "dump": ("into", "in"),
}
SAVE_NUMBERS = ("{list}", "the numbers {list}", "these numbers: {list},", "the list {list}")
SAVE_FRAMES = (
    *(
        f"{verb} {numbers} {into} {{file}}"
        for verb, intos in SAVE_VERBS.items()
        for numbers in SAVE_NUMBERS
        for into in intos
    ),
    *(
        f"{verb} {into} {{file}}: {{list}}"
        for verb in ("save", "write", "put")
        for into in SAVE_VERBS[verb]
    ),
    "create {file} with {list} in it",
    "create {file} holding {list}",
    "make a file {file} containing {list}",
    "make {file} and put {list} in it",
    "{file} should hold {list}",
    "{list} go in {file}",
)
# What a read of a saved file asks, and the ways to name the file's numbers: each ask with each. The
# held-out phrasings' cores ("total up", "the maximum in", "what ... holds") stay out.
READ_ASKS = {
    "read_sum": (
        "What is the sum of {numbers}?",
        "add up {numbers}",
        "Sum {numbers}.",
        "What do {numbers} add up to?",
        "what's the total of {numbers}",
        "Give me the sum of {numbers}.",
    ),
    "read_sorted": (
        "Sort {numbers}.",
        "Put {numbers} in order.",
        "What are {numbers}, sorted?",
        "sort {numbers} from smallest to largest",
        "Show me {numbers} in order.",
    ),
    "read_largest": (
        "What is the largest of {numbers}?",
        "which of {numbers} is the biggest",
        "Find the largest of {numbers}.",
        "What is the highest of {numbers}?",
        "the max of {numbers}?",
        "Which is the greatest of {numbers}?",
    ),
}
READ_NUMBERS = (
    "the numbers in {file}",
    "the numbers saved in {file}",
    "what is in {file}",
    "the values in {file}",
    "the numbers I saved in {file}",
)
READ_FRAMES = {
    kind: tuple(ask.format(numbers=numbers) for ask in asks for numbers in READ_NUMBERS)
    for kind, asks in READ_ASKS.items()
}
SAVE_OPENERS = ("",) * 5 + (
    "Please ",
    "Now ",
    "Next, ",
    "OK, ",
    "Also ",
    "And ",
    "Then ",
    "Can you ",
)

# Each kind's frames name the values a later question carries; a follow-up refers to the earlier question's
# result or list without repeating it ("and times 2?"). Their held-out counterparts are held_out_phrasings.py's.
FOLLOW_UP_FRAMES = {
    "times": (
        "and times {k}?",
        "Now multiply that by {k}.",
        "what about times {k}",
        "And that times {k}?",
        "multiply the result by {k}",
        "now x{k}",
        "Times {k}?",
        "ok, and multiplied by {k}?",
        # The number first and the result a word: held-out follow-ups are worded so ("... times that?"), and a
        # model that has only seen "times {k}" after the result writes `print(5 * 2)` for them.
        "what's {k} times the result?",
        "{k} x the last answer?",
        "Now {k} times this number.",
        "the answer multiplied by {k}?",
    ),
    "plus": (
        "and plus {k}?",
        "Now add {k} to that.",
        "add {k} to the result",
        "what if you add {k}?",
        "And {k} more?",
        "plus {k}?",
        "what's {k} more than the result?",
        "{k} plus the last answer?",
        "the answer increased by {k}?",
    ),
    "minus": (
        "and minus {k}?",
        "Now subtract {k} from that.",
        "take {k} from the result",
        "what if you take away {k}?",
        "minus {k}?",
        "what's {k} less than the result?",
        "the last answer minus {k}?",
        "the answer reduced by {k}?",
    ),
    "largest_first": (
        "now largest first",
        "Now sort them from largest to smallest.",
        "and in descending order?",
        "Now the other way round, biggest first.",
        "now from high to low",
        "sort them descending now",
    ),
    "smallest_first": (
        "now smallest first",
        "Now sort them from smallest to largest.",
        "and in ascending order?",
        "Now the other way round, smallest first.",
        "now from low to high",
        "sort them ascending now",
    ),
    "other_word": (
        "what about {word}?",
        "and {word}?",
        "Now do the same for {word}.",
        "same for {word}",
        "how about {word}?",
        "And for {word}?",
    ),
    "other_amount": (
        "and {n} {unit}?",
        "what about {n} {unit}?",
        "Now {n} {unit}.",
        "same for {n} {unit}",
        "And {n}?",
    ),
    "retry": (  # after a denied call, the reader allows it
        "Try again, I will allow it.",
        "ok, run it now",
        "Please run it again.",
        "go ahead, you can run it",
        "Sorry, that was a mistake. Run it.",
        "You may run it now.",
    ),
    "write": SAVE_FRAMES,  # a list of numbers saved in a file of /data, composed below
    # A saved file's numbers read back, composed as saves are (READ_FRAMES): a later question about a file
    # was the files' other miss (a sum asked in words training lacked was counted as the file's lines).
    **READ_FRAMES,
}


def follow_up_question(rng: random.Random, kind: str, **values) -> str:
    """A later question of `kind` as training words it (FOLLOW_UP_FRAMES), its values in their forms, typed; a
    request to save, inside an opener and a closer too."""
    if "name" in values:
        values["file"] = rng.choice(FILE_FORMS).format(name=values["name"])
    if "list" in values:
        values["list"] = listed(rng, values["list"])
    for key in ("unit",):
        if key in values:
            values[key] = rng.choice(UNIT_NAMES[values[key]])
    question = rng.choice(FOLLOW_UP_FRAMES[kind]).format(**values)
    if kind == "write":
        question = save_request(rng, question)
    return typed(rng, question)


def save_request(rng: random.Random, request: str) -> str:
    """A composed request to save (SAVE_FRAMES, filled) as a sentence: an opener, a closer, and its mark."""
    opener, closer = rng.choice(SAVE_OPENERS), rng.choice(CLOSERS)
    if not opener:
        request = request[0].upper() + request[1:]
    question = opener + request.rstrip(",") + closer
    return question if question[-1] in "?.!" else question + ("?" if opener == "Can you " else ".")
