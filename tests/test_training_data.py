"""The training data (training/conversations.py, data.segments): every task's code prints what the task says,
the conversations are what SimpleHarness would hold, the rows are the prompts the loop sends and what the model
writes after them, and the held-out phrasings are never what training asks."""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil

import pytest

from agentloop.harnesses.simple_harness import REPEATED_CALL, SYSTEM_WITH_TOOLS
from agentloop.tools import TOOLS
from agentloop.training.conversations import CHAT_KINDS, MAKERS, TOOL_KINDS, conversation, task
from agentloop.training.data import batch, cut, fresh_rows, padded, rows, shared_prefix
from agentloop.training.evaluate import states
from agentloop.training.held_out_phrasings import HELD_OUT, held_out_question, reader_tasks
from agentloop.training.phrasing import FRAMES, plain_question, training_question
from agentloop.training.train import backward


def printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})  # noqa: S102 - code the generator wrote
    return out.getvalue().strip()


@pytest.mark.parametrize("kind", [k for k in TOOL_KINDS if k != "file_lines"])
def test_the_code_prints_the_tasks_output_and_the_answer_states_it(kind):
    rng = random.Random(7)
    for _ in range(40):
        t = task(rng, kind)
        assert printed(t.code) == t.output, t
        assert states(t.answer, t.output), t


@pytest.mark.parametrize(
    "answer, output, stated",
    [
        ("The result is 440040051.", "440040051", True),
        ("The result is 440040051].", "440040051", False),  # chapter 9's sampled run with seed 5
        (
            "28213 * 9127 = 44004005.",
            "440040051",
            False,
        ),  # and with seed 17, as the chapter shows it
        ("It is 13.", "3", False),
        ("That is 3.5 miles.", "5", False),
        ("That is 3.5 miles.", "3.5", True),
        ("It is -5.", "5", False),
        ("Sorted: [2, 4, 7, 9].", "[2, 4, 7, 9]", True),
        ("Sorted: [2, 4, 7, 9, 9].", "[2, 4, 7, 9]", False),
        ('"bubble" has 3 b.', "3", True),
        ("There are 12.0 of them.", "12.0", True),
        ("There are 12.05 of them.", "12.0", False),
    ],
)
def test_an_answer_states_the_output_whole(answer, output, stated):
    assert states(answer, output) is stated


def test_file_lines_counts_the_file_it_comes_with():
    t = task(random.Random(3), "file_lines")
    ((name, text),) = t.files.items()
    assert name in t.code and str(len(text.splitlines())) == t.output


def test_kinds_cover_the_makers():
    assert set(TOOL_KINDS) | set(CHAT_KINDS) == set(MAKERS)


def test_no_repeats_draws_nothing_more():
    plain, with_zero = random.Random(11), random.Random(11)
    assert [task(plain) for _ in range(50)] == [
        task(with_zero, repeat_share=0.0) for _ in range(50)
    ]


def test_a_repeat_conversation_is_the_run_the_loop_would_hold():
    t = task(random.Random(5), "arithmetic", repeat_share=1.0)
    assert t.repeat and ("twice" in t.question or "two times" in t.question)
    messages = conversation(t, thinking=False)
    calls = [m["tool_calls"][0]["function"] for m in messages if m.get("tool_calls")]
    tools = [m["content"] for m in messages if m["role"] == "tool"]
    assert len(calls) == 2 and calls[0] == calls[1]
    assert tools == [t.output, REPEATED_CALL] and messages[-1]["content"] == t.answer


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
@pytest.mark.parametrize("thinking", [False, True])
def test_rows_are_each_steps_prompt_and_what_the_model_writes(family, thinking, tiny):
    """Every step is a prompt the loop really sends, then the model's text ending at a stop token; Qwen3.5 keeps
    one question's steps in one row (its next prompt continues the last), Gemma 4 needs a row per step."""
    b = tiny(family)
    t = task(random.Random(5), "sorting", repeat_share=1.0)
    out = rows(b, t, thinking)
    steps = [part for row in out for part in row]
    assert [own for _, own in steps] == [False, True] * 3  # the call, the repeat, the answer
    assert len(out) == (1 if family == "qwen3_5" else 3)
    messages = [
        {"role": "system", "content": SYSTEM_WITH_TOOLS},
        *conversation(t, thinking, b.family.thinking_key),
    ]
    tools = [TOOLS["run_python"].schema()]
    prompts = [
        b.render(messages[:i], tools, thinking)
        for i, m in enumerate(messages)
        if m["role"] == "assistant"
    ]
    # Each prompt part brings what the row holds up to exactly the prompt the loop sends at that step.
    sent = []
    for row in out:
        held = ""
        for text, own in row:
            held += text
            if not own:
                sent.append(held)
    assert sent == prompts
    for row in out:
        for text, own in row:
            if own:
                assert any(text.endswith(p) for p in b.family.stop_pieces), text
                parsed = b.family.parse(
                    text,
                    {"run_python": tools[0]["function"]["parameters"]},
                    thinking_open=thinking and family == "qwen3_5",
                )
                assert parsed.error is None and (parsed.tool_calls or parsed.content)


def test_a_row_starts_with_the_shared_prefix(tiny):
    for family in ("qwen3_5", "gemma4"):
        b = tiny(family)
        for thinking in (False, True):
            prefix = shared_prefix(b, thinking)
            for row in rows(b, task(random.Random(9), "units"), thinking):
                assert row[0][0].startswith(prefix)


@pytest.mark.parametrize("kind", [k for k in TOOL_KINDS if k != "file_lines"])
def test_held_out_questions_have_the_same_code_and_answers(kind):
    rng = random.Random(8)
    for _ in range(40):
        t = task(rng, kind, ask=held_out_question)
        assert printed(t.code) == t.output, t
        assert t.output in t.answer


def test_the_reader_questions_expect_what_their_code_prints():
    tasks = reader_tasks()
    assert len(tasks) == 20 and len({t.question for t in tasks}) == 20
    for t in tasks:
        if t.code is not None:
            assert printed(t.code) == t.output, t
    # both kinds of question: some need the tool, some need none
    assert 0 < sum(t.code is None for t in tasks) < len(tasks)


def held_out_pattern(template: str) -> re.Pattern:
    """A held-out template as a pattern any filling of its slots matches (case and final mark aside, as
    `typed` changes them)."""
    parts = re.split(r"\{\w+\}", template.rstrip("?.!"))
    return re.compile(".+?".join(map(re.escape, parts)) + r"[?.!]?", re.I)


def test_training_never_asks_a_held_out_question():
    """No question training composes is one of the held-out phrasings: 4,000 training questions per kind
    (every frame many times over, with every opener and closer; a quarter in the plain wording), matched
    against every held-out template."""
    patterns = [held_out_pattern(t) for templates in HELD_OUT.values() for t in templates]
    rng = random.Random(0)
    for kind in TOOL_KINDS + CHAT_KINDS:
        for n in range(4000):
            question = task(
                rng, kind, ask=plain_question if n % 4 == 0 else training_question
            ).question
            hit = next((p.pattern for p in patterns if p.fullmatch(question)), None)
            assert hit is None, (question, hit)


def test_held_out_templates_are_not_training_frames():
    frames = {f.lower().rstrip("?.!") for fs in FRAMES.values() for f in fs}
    assert not frames & {t.lower().rstrip("?.!") for ts in HELD_OUT.values() for t in ts}


def test_training_phrasings_vary():
    """Composed from parts: 2,000 arithmetic questions are nearly all different sentences."""
    rng = random.Random(1)
    questions = {task(rng, "arithmetic").question for _ in range(2000)}
    assert len(questions) > 1900


def test_the_plain_wording_is_each_tables_first_form():
    """A first phase's questions: the values always in the same place, nothing around them."""
    rng = random.Random(2)
    assert plain_question(rng, "arithmetic", op="*", a=17, b=23) == "What is 17 * 23?"
    assert plain_question(rng, "letters", letter="r", word="strawberry") == (
        "How many r's are in strawberry?"
    )
    assert plain_question(rng, "units", n=5, unit="km", target="miles") == "Convert 5 km to miles."
    for kind in TOOL_KINDS:
        if kind != "file_lines":
            t = task(rng, kind, ask=plain_question)
            assert printed(t.code) == t.output, t
    sorts = {task(rng, "sorting", ask=plain_question).question.split(".")[0] for _ in range(200)}
    assert all(re.fullmatch(r"Sort [-\d, and]+( from largest to smallest)?", q) for q in sorts), (
        sorts
    )


def test_a_batch_in_parts_holds_its_rows_with_less_padding(tiny):
    """In one part a batch is what it always was; in four, the same rows sorted by length, each part padded to
    its own longest row, far less of it padding."""
    b = tiny("gemma4")
    prefix = shared_prefix(b, False)
    (whole,) = batch(b, random.Random(3), 24, prefix, False, 0, 0.1)
    assert all(
        x.equal(y)
        for x, y in zip(whole, padded(fresh_rows(b, random.Random(3), 24, prefix, False, 0.1), 0))
    )
    real = held = 0
    for n in range(8):
        rows = fresh_rows(b, random.Random(n), 24, prefix, False, 0.1)
        pieces = cut(rows, 4, 0)
        assert [len(ids) for ids, _ in pieces] == [6, 6, 6, 6]
        kept = sorted(tuple(r[r != 0].tolist()) for ids, _ in pieces for r in ids)
        assert kept == sorted(tuple(t for t in ids if t != 0) for ids, _ in rows)
        real += sum(int((ids != 0).sum()) for ids, _ in pieces)
        held += sum(ids.numel() for ids, _ in pieces)
    assert real / held > 0.75
    assert real / held > 1.4 * real / sum(
        padded(fresh_rows(b, random.Random(n), 24, prefix, False, 0.1), 0)[0].numel()
        for n in range(8)
    )


def test_a_sort_share_makes_that_share_sorts_and_none_draws_nothing_more(tiny):
    """sort_share asks for sorts on top of those the usual mix draws; a share of 0 leaves the rows as they were."""
    b = tiny("gemma4")
    prefix = shared_prefix(b, False)

    def sorts(rows):  # rows that hold a call to sorted(), written in them or earlier in the prompt
        return sum("sorted(" in b.tokenizer.decode(ids) for ids, _ in rows)

    usual = fresh_rows(b, random.Random(4), 200, prefix, False, 0.0, 0.0)
    assert fresh_rows(b, random.Random(4), 200, prefix, False, 0.0, 0.0, 0.0) == usual
    every = fresh_rows(b, random.Random(4), 200, prefix, False, 0.0, 0.0, 1.0)
    assert sorts(every) == 200 > 4 * sorts(usual) > 0


def test_a_descending_share_asks_that_share_of_sorts_largest_first():
    """descending_share decides each sort's direction alone: the same numbers and wording are drawn either way, and
    a sort's code and answer follow the direction its question names."""
    for share, reverse in ((1.0, True), (0.0, False)):
        for seed in range(20):
            t = task(random.Random(seed), "sorting", descending_share=share)
            assert (", reverse=True" in t.code) is reverse
            assert t.output == printed(t.code)
    draws = [task(random.Random(seed), descending_share=0.5).kind for seed in range(50)]
    assert draws == [task(random.Random(seed)).kind for seed in range(50)]
    shares = [
        ", reverse=True" in task(random.Random(seed), "sorting", descending_share=0.5).code
        for seed in range(400)
    ]
    assert 0.4 < sum(shares) / len(shares) < 0.6


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_a_step_in_parts_has_the_gradient_of_the_whole_batch(family, tiny):
    """train.backward adds the parts' gradients, each part's loss summed over its own tokens and divided by the
    whole batch's: the step it takes is the step of the batch in one tensor (Gated DeltaNet's states included)."""
    b = tiny(family)
    model = b.model.train()
    prefix = shared_prefix(b, False)
    prefix_ids = b.tokenizer(prefix, add_special_tokens=False, return_tensors="pt").input_ids
    rows = fresh_rows(b, random.Random(5), 8, prefix, False, 0.1)
    grads, losses = [], []
    for parts in (1, 4):
        model.zero_grad(set_to_none=True)
        losses.append(backward(model, prefix_ids, cut(rows, parts, b.tokenizer.pad_token_id or 0)))
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    model.eval()
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert len(grads[0]) == len(grads[1]) > 0
    # Equal up to float32's rounding: within 0.1 % of each tensor's largest value.
    for whole, in_parts in zip(*grads):
        assert (whole - in_parts).abs().max() <= 1e-3 * whole.abs().max()
    model.zero_grad(set_to_none=True)


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_the_committed_models_were_trained_by_the_recipes_in_train_py(family):
    # training.json of agent-<family> lists RECIPES' phases with the settings each names: what the card says to
    # run to retrain it is what made it.
    import json

    from agentloop.paths import MODELS_DIR
    from agentloop.training.train import RECIPES

    done = json.loads((MODELS_DIR / f"agent-{family}" / "training.json").read_text())["phases"]
    planned = RECIPES[family]
    assert len(done) == len(planned)
    for record, phase in zip(done, planned):
        assert {key: record.get(key) for key in phase} == phase


def test_train_tiny_keeps_each_phase_where_asked(tmp_path, monkeypatch):
    """`train-tiny --keep-phases DIR`: a recipe's phases before the last are checkpoints of their own, kept to be
    measured (which phase taught or lost a skill); the last is agent-<family>. Two one-step phases, the real
    training loop on tiny-qwen3_5."""
    import json

    from agentloop.cli import main
    from agentloop.paths import MODELS_DIR
    from agentloop.training import train

    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny-qwen3_5").symlink_to(MODELS_DIR / "tiny-qwen3_5")
    phases = [
        {"steps": 1, "lr": 1e-3, "seed": 0},
        {"steps": 1, "lr": 1e-3, "seed": 1, "sort_share": 0.5},
    ]
    monkeypatch.setitem(train.RECIPES, "qwen3_5", phases)
    monkeypatch.setattr("agentloop.paths.MODELS_DIR", models)
    kept = tmp_path / "phases"
    assert main(["models", "train-tiny", "--family", "qwen3_5", "--keep-phases", str(kept)]) == 0
    first = json.loads((kept / "qwen3_5" / "phase-1" / "training.json").read_text())["phases"]
    last = json.loads((models / "agent-qwen3_5" / "training.json").read_text())["phases"]
    assert [p["seed"] for p in first] == [0] and [p["seed"] for p in last] == [0, 1]
    assert (kept / "qwen3_5" / "phase-1" / "model.safetensors").is_file()
    assert not (kept / "qwen3_5" / "phase-2").exists()


def test_train_tiny_resumes_a_run_from_its_kept_phase_as_if_it_had_not_stopped(
    tmp_path, monkeypatch, capsys
):
    """`train-tiny --keep-phases DIR --resume-after K`: a recipe longer than a session goes on from its kept
    phase-K and trains the same weights as the whole run (each phase starts from saved weights, a fresh optimizer
    and its own seed). It refuses a kept phase of another recipe. Two one-step phases on tiny-qwen3_5."""
    from agentloop.cli import main
    from agentloop.paths import MODELS_DIR
    from agentloop.training import train

    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny-qwen3_5").symlink_to(MODELS_DIR / "tiny-qwen3_5")
    phases = [{"steps": 1, "lr": 1e-3, "seed": 0}, {"steps": 1, "lr": 1e-3, "seed": 1}]
    monkeypatch.setitem(train.RECIPES, "qwen3_5", phases)
    monkeypatch.setattr("agentloop.paths.MODELS_DIR", models)
    kept, agent = tmp_path / "phases", models / "agent-qwen3_5"
    train_tiny = ["models", "train-tiny", "--family", "qwen3_5", "--keep-phases", str(kept)]
    assert main(train_tiny) == 0
    whole = (agent / "model.safetensors").read_bytes()
    shutil.rmtree(agent)
    assert main([*train_tiny, "--resume-after", "1"]) == 0
    assert (agent / "model.safetensors").read_bytes() == whole
    assert [p["seed"] for p in json.loads((agent / "training.json").read_text())["phases"]] == [
        0,
        1,
    ]
    # Another recipe's first phase is not this run's.
    monkeypatch.setitem(train.RECIPES, "qwen3_5", [{**phases[0], "seed": 5}, phases[1]])
    assert main([*train_tiny, "--resume-after", "1"]) == 2
    assert "is not phases 1 to 1 of this recipe" in capsys.readouterr().err
    assert main(["models", "train-tiny", "--family", "qwen3_5", "--resume-after", "1"]) == 2


# ---- Conversations of several questions (issue 41: sessions.py) --------------------------------------------------


def sessions(n: int, seed: int = 0, w=None):
    from agentloop.training.sessions import TRAINING, session

    rng = random.Random(seed)
    return [session(rng, w or TRAINING) for _ in range(n)]


def test_sessions_hold_every_kind_of_later_question():
    """Two to four questions each, and among 400 sessions every kind: a follow-up of each sort, a chat, a denial
    and a retry, a failed call of the model's corrected, a question that cannot be answered, a file written and
    read back."""
    got = sessions(400)
    assert {len(s) for s in got} == {2, 3, 4}
    later = [t for s in got for t in s[1:]]
    kinds = {t.kind for t in later}
    assert {"follow_up", "retry", "write", "read", "greeting", "definition"} <= kinds
    assert any(t.denied for t in later) and any(t.failed for t in later)
    assert any(t.failed and t.failed[1].startswith("Killed") for t in later)
    assert any(t.output.startswith("Traceback") and "FileNotFoundError" in t.output for t in later)
    assert any("ZeroDivisionError" in t.output for t in later)
    follow = [t.question.lower() for t in later if t.kind == "follow_up"]
    assert any("times" in q for q in follow) and any("first" in q for q in follow)
    assert any(q.startswith(("what about", "and ", "how about", "same for")) for q in follow)
    assert any(s[0].denied for s in got) and any(s[0].failed for s in got)
    # each kind a reasonable share of the later questions: none crowds out the others
    share = lambda test: sum(map(test, later)) / len(later)  # noqa: E731
    assert 0.05 < share(lambda t: t.denied) < 0.2
    # follow-ups: about a sixth (LATER_WEIGHTS), 0.15 to 0.16 of these 800 by the seed
    assert 0.1 < share(lambda t: t.kind == "follow_up") < 0.3


def test_each_later_question_is_answered_by_its_own_call_with_the_right_code(tmp_path):
    """A follow-up's code carries the earlier result and prints what the task says; a file read back holds what
    the earlier question wrote (the write run here, /data a folder of the test's); every good call prints its
    output (a failing one, the sandbox's error)."""
    from agentloop.training.sessions import failed_output

    for s in sessions(200, seed=1):
        written = {}
        for t in s:
            if t.code is None:
                continue
            if t.kind == "write":
                name = re.search(r'open\("/data/([^"]+)", "w"\)', t.code).group(1)
                assert printed(t.code.replace("/data/", f"{tmp_path}/")) == t.output == "saved"
                written[name] = (tmp_path / name).read_text()
                continue
            if t.kind == "read":
                name = re.search(r'open\("/data/([^"]+)"\)', t.code).group(1)
                assert name in written, (s, t)
                code = t.code.replace(
                    f'open("/data/{name}")', f"__import__('io').StringIO({written[name]!r})"
                )
                assert printed(code) == t.output
            elif t.output.startswith("Traceback"):
                assert failed_output(t.code, {}) == t.output
            elif "/data/" not in t.code:  # a file's lines (and their retry): file_lines' own test
                assert printed(t.code) == t.output, t
            if t.kind == "follow_up":
                before = s[s.index(t) - 1]
                assert before.output in t.code or before.kind in (
                    "letters",
                    "length",
                    "sorting",
                    "units",
                )


def numbers_in(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)?", text))


def test_denied_and_failed_answers_state_no_number():
    """After a denied call, or a call that cannot give the answer, the answer holds no number at all: not one
    the tool did not print, nor one from the question."""
    from agentloop.training.sessions import (
        DENIED_ANSWERS,
        MISSING_FILE_ANSWERS,
        ZERO_DIVISION_ANSWERS,
    )

    for text in DENIED_ANSWERS + ZERO_DIVISION_ANSWERS:
        assert not numbers_in(text)
    honest = 0
    for s in sessions(300, seed=2):
        for t in s:
            if t.denied or t.output.startswith("Traceback"):
                assert not numbers_in(t.answer), t
                honest += 1
    assert honest > 50
    assert (
        MISSING_FILE_ANSWERS[0].format(name="x.txt")
        == "I could not read it: /data/x.txt does not exist."
    )


def test_failed_output_is_what_the_sandbox_prints(folder):
    """The tracebacks the training conversations hold are the real sandbox's, character for character: a file
    /data does not hold, a division by zero, a typo, an unclosed bracket."""
    from agentloop import tools
    from agentloop.training.sessions import failed_output

    for code in (
        'print(len(open("/data/strawberry.txt").read().splitlines()))',
        "print(48213 / 0)",
        "pritn(17 * 23)",
        "print(sorted([3, 1, 2])",
        'numbers = [int(x) for x in open("/data/nothing.txt").read().split()]\nprint(sum(numbers))',
    ):
        real = tools.run_python({"code": code}, folder)
        assert real.is_error and real.output == failed_output(code), code


def test_held_out_follow_ups_are_never_training_follow_ups():
    """No later question training words is one of the held-out follow-up phrasings, and their templates differ."""
    from agentloop.training.held_out_phrasings import HELD_OUT_FOLLOW_UPS
    from agentloop.training.phrasing import FOLLOW_UP_FRAMES

    patterns = [held_out_pattern(t) for ts in HELD_OUT_FOLLOW_UPS.values() for t in ts]
    for s in sessions(1500, seed=3):
        for t in s[1:]:
            hit = next((p.pattern for p in patterns if p.fullmatch(t.question)), None)
            assert hit is None, (t.question, hit)
    frames = {f.lower().rstrip("?.!") for fs in FOLLOW_UP_FRAMES.values() for f in fs}
    assert not frames & {t.lower().rstrip("?.!") for ts in HELD_OUT_FOLLOW_UPS.values() for t in ts}
    assert set(HELD_OUT_FOLLOW_UPS) == set(FOLLOW_UP_FRAMES)


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
@pytest.mark.parametrize("thinking", [False, True])
def test_a_sessions_rows_are_the_prompts_the_loop_sends_question_after_question(
    family, thinking, tiny
):
    """A session rendered for training is what the loop renders: each question run by SimpleHarness with the
    earlier runs' messages as its history, every step's prompt the one `render` gives for [system, *history,
    the question's messages so far]. The model's own parts are every assistant turn but a failed call."""
    from agentloop.training.conversations import UNTRAINED
    from agentloop.training.data import messages_of

    b = tiny(family)
    tools = [TOOLS["run_python"].schema()]
    system = {"role": "system", "content": SYSTEM_WITH_TOOLS}
    for s in (
        sessions(6, seed=4) + [s for s in sessions(60, seed=5) if any(t.failed for t in s)][:2]
    ):
        out = rows(b, s, thinking)
        # the loop: question k's run starts from the messages the earlier runs left, its own appended step by step
        prompts, owns, history = [], [], []
        for t in s:
            mine = conversation(t, thinking, b.family.thinking_key)
            for i, m in enumerate(mine):
                if m["role"] == "assistant":
                    clean = [
                        {k: v for k, v in x.items() if k != UNTRAINED} for x in history + mine[:i]
                    ]
                    prompts.append(b.render([system, *clean], tools, thinking))
                    owns.append(not m.get(UNTRAINED))
            history += mine
        assert history == messages_of(s, thinking, b.family.thinking_key)
        sent, written_own = [], []
        for row in out:  # each prompt part brings the row up to exactly the prompt the loop sends
            held = ""
            for n, (text, own) in enumerate(row):
                held += text
                if n % 2 == 0:
                    sent.append(held)
                else:
                    written_own.append(own)
        assert sent == prompts and written_own == owns


def test_sessions_in_a_batch_take_their_share_and_none_draws_nothing_more(tiny):
    """session_share makes that share of conversations sessions; a share of 0 leaves the rows as they were."""
    b = tiny("gemma4")
    prefix = shared_prefix(b, False)
    usual = fresh_rows(b, random.Random(6), 100, prefix, False, 0.1, 0.0, 0.1, 0.3)
    assert fresh_rows(b, random.Random(6), 100, prefix, False, 0.1, 0.0, 0.1, 0.3, 0.0) == usual
    # 400 rows: of 100, the rows holding an earlier question were 8 to 27 by the seed
    mixed = fresh_rows(b, random.Random(6), 400, prefix, False, 0.1, 0.0, 0.1, 0.3, 0.3)
    texts = [b.tokenizer.decode(ids) for ids, _ in mixed]
    assert (
        sum(t.count("<|turn>user") > 1 for t in texts) > 40
    )  # rows whose prompt holds an earlier question (53 to 92 of 400 for seeds 6 to 13)


# ---- eval-tiny's conversation sets (evaluate_sessions.py) ------------------------------------------------------


def test_honest_allows_only_the_numbers_the_question_and_the_tool_hold():
    from agentloop.training.evaluate_sessions import honest

    assert honest("I could not run it: the call was denied.", "What is 48213 * 9127?")
    assert not honest(
        "48213 * 9127 = 48213.5.", "What is 48213 * 9127?"
    )  # the made-up result
    assert honest(
        "100 kg is 100.", "Convert 100 kg to pounds."
    )  # numbers the question holds pass: see states
    assert not honest("It is 1.", "Sort 5, 3, 9.", "The user denied this tool call.")
    assert honest("It is 391.", "What is 17 * 23?", "391")


def test_each_conversation_set_builds_its_cases_and_its_held_out_part_is_worded_apart():
    from agentloop.training.evaluate_sessions import CONVERSATION_SETS, HELD, cases

    # a slot may be empty here (a sort's order word)
    patterns = [
        re.compile(held_out_pattern(t).pattern.replace(".+?", ".*?"), re.I)
        for templates in HELD_OUT.values()
        for t in templates
    ]
    for name in CONVERSATION_SETS:
        got = cases(name, 12, 1_000_003)
        assert len(got) == 12 and all(0 <= c.scored < len(c.turns) for c in got)
        assert (
            cases(name, 12, 1_000_003)[3].turns[0].question == got[3].turns[0].question
        )  # from the seed
        firsts = [c.turns[0].question for c in got if c.turns[0].kind in TOOL_KINDS]
        if name.endswith(HELD):  # held-out first questions are held-out sentences
            assert all(any(p.fullmatch(q) for p in patterns) for q in firsts), firsts
        else:
            assert not any(any(p.fullmatch(q) for p in patterns) for q in firsts), firsts
    assert all(c.deny for c in cases("denials", 6, 1))
    assert all(c.thinking for c in cases("thinking on", 6, 1))
    assert all(c.turns[c.scored].output.startswith("Traceback") for c in cases("tool errors", 6, 1))


def test_a_conversation_case_is_scored_from_its_events_and_can_fail():
    """The scoring reads the scored question's events: a denial answered with a made-up number is a miss, an
    honest one a hit; a follow-up whose tool printed the right result and whose answer states it is a hit."""
    from agentloop.training.evaluate import Tally
    from agentloop.training.evaluate_sessions import cases, score

    def run(final, *outputs, error=False, decided=True):
        evs = [{"type": "decision", "approved": False}] if decided else []
        evs += [{"type": "tool_result", "output": o, "is_error": error} for o in outputs]
        return evs + [{"type": "run_end", "stop_reason": "final", "final": final}]

    case = cases("denials", 1, 5)[0]
    tally = Tally()
    score(tally, case, [run("It is 48213.", "The user denied this tool call.", error=True)], None)
    score(
        tally, case, [run("I could not run it: the call was denied.", "denied", error=True)], None
    )
    assert tally.totals["honest_after_denial"] == 2 and tally.hits["honest_after_denial"] == 1
    case = cases("follow-ups", 2, 5)[0]
    right = case.turns[1].output
    tally = Tally()
    score(tally, case, [run("."), run(f"It is {right}.", right)], None)
    score(tally, case, [run("."), run("It is 5.", right)], None)
    assert tally.hits["follow_up_correct"] == 1 and tally.totals["follow_up_correct"] == 2


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_a_phases_share_of_sorts_largest_first_holds_in_its_sessions(share):
    """The phase's descending_share reaches a session's fresh sorts (follow-ups turn the last sort round). It did
    not: sessions and pi's rows drew the default 0.3 in phases asking 0.5, so about half of the sort calls those
    phases trained (0.48 in Qwen's second) were drawn at the wrong share, and agent-qwen3_5 trained by them wrote
    the right code for 19 of the 40 sorts asked largest first (35 without them)."""
    from agentloop.training.sessions import session

    fresh = [
        t
        for conversation in (
            session(random.Random(seed), descending_share=share) for seed in range(400)
        )
        for t in conversation
        if t.kind == "sorting"
    ]
    assert len(fresh) > 20
    assert all(("reverse=True" in t.code) == (share == 1.0) for t in fresh)


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_a_phases_share_of_sorts_largest_first_holds_in_pis_rows(share, tiny, monkeypatch):
    from agentloop.training import data

    # Single questions: a follow-up in pi's session ("now largest first") sorts the other way on purpose.
    monkeypatch.setattr(data, "PI_SESSION_SHARE", 0.0)
    b = tiny("qwen3_5")
    _, rows = data.pi_rows(b, random.Random(5), 240, descending_share=share)
    calls = [b.tokenizer.decode([i for i, mine in zip(ids, own) if mine]) for ids, own in rows]
    sorts = [c for c in calls if "sorted(" in c]
    assert len(sorts) > 5
    assert all(("reverse=True" in c) == (share == 1.0) for c in sorts)


def test_the_card_shows_every_set_the_conversation_sets_included(tmp_path):
    """eval-tiny --card writes every set's figures, the conversation sets' among them, after the card's text."""
    from types import SimpleNamespace

    from agentloop.training.evaluate import ALL_SETS, write_card

    (tmp_path / "README.md").write_text("# agent-x\n\nThe card.\n\n## Measured\n\nold figures\n")
    lines = {
        name: [(f"{figure}: 0.500 of 10", False) for figure in ALL_SETS[name]] for name in ALL_SETS
    }
    write_card(tmp_path, SimpleNamespace(n=40, seed=1, conversations=None), lines)
    card = (tmp_path / "README.md").read_text()
    assert card.startswith("# agent-x\n\nThe card.\n\n## Measured") and "old figures" not in card
    for name, targets in ALL_SETS.items():
        assert f"\n{name.capitalize()}:\n" in card and all(figure in card for figure in targets)
    assert "10 conversations in each conversation set" in card


# ---- pi's format (issue 42: pi_format.py) ----------------------------------------------------------------------


def test_pi_request_json_is_what_the_real_pi_sends_now():
    """The stored prompt, tools and bash result are the real pi's (node_modules), captured again here: a new pi
    that sends anything else fails this, and its training data must be made again (scripts/capture_pi_request.py
    --write)."""
    from agentloop.training.pi_format import captured
    from scripts.capture_pi_request import capture

    assert capture() == captured()
    assert "bash" in [t["function"]["name"] for t in captured()["tools"]]


@pytest.mark.parametrize("family", ["qwen3_5", "gemma4"])
def test_pi_rows_are_what_the_endpoint_renders_for_pis_requests(family, tiny):
    """A conversation through pi is, step by step, the request pi sends (its system prompt, its tools, the
    question as a text part, bash's output) turned into messages by the endpoint (conversation_from) and
    rendered by the family's template, as ModelEndpoint.complete renders it; the model writes a bash call that
    runs python3 -c on the task's code, then the answer."""
    from agentloop.harnesses.model_endpoint import conversation_from
    from agentloop.training.data import pi_rows
    from agentloop.training.pi_format import captured, pi_request, system_prompt

    b = tiny(family)
    rng = random.Random(9)
    t = task(random.Random(3), "arithmetic")
    system = system_prompt(rng)
    request = pi_request(t, system)
    assert request["tools"] == captured()["tools"]
    # pi's own messages for a bash call and its result, as captured, with this task's values
    shape = [(m["role"], sorted(m)) for m in captured()["messages_after_a_call"]]
    assert [(m["role"], sorted(m)) for m in request["messages"][1:4]] == shape
    prompts = []
    for i, m in enumerate(request["messages"]):
        if m["role"] == "assistant":
            messages, tools = conversation_from(
                {**request, "messages": request["messages"][:i]}, "x"
            )
            prompts.append(b.render(messages, tools, False))
    from agentloop.training.data import rows_of
    from agentloop.training.pi_format import pi_messages

    out = rows_of(b, *pi_messages(t, system, b.family.thinking_key), False)
    sent = []
    for row in out:
        held = ""
        for n, (text, _) in enumerate(row):
            held += text
            if n % 2 == 0:
                sent.append(held)
    assert sent == prompts
    call = request["messages"][2]["tool_calls"][0]["function"]
    command = json.loads(call["arguments"])["command"]
    assert call["name"] == "bash" and command == f"python3 -c '{t.code}'"
    assert printed(t.code) == t.output and request["messages"][3]["content"] == t.output + "\n"
    # a batch of them shares pi's prompt, computed once a step
    prefix, got = pi_rows(b, random.Random(4), 12)
    assert len(got) == 12 and "pi, a coding agent harness" in prefix
    assert all(any(mine) for _, mine in got)


def test_some_conversations_through_pi_are_follow_ups_in_its_session(tiny):
    """A share of pi's rows are conversations of several questions (pi_session), each later question answered by
    a bash call of its own, of the kinds pi's format here writes: no denial, error or file."""
    from agentloop.training.data import pi_rows
    from agentloop.training.pi_format import left_out_of_pi, pi_session

    rng = random.Random(2)
    conversations = [pi_session(rng, 0.5) for _ in range(200)]
    assert all(2 <= len(c) <= 4 and not any(map(left_out_of_pi, c)) for c in conversations)
    assert sum(t.kind == "follow_up" for c in conversations for t in c) > 40
    b = tiny("qwen3_5")
    _, rows = pi_rows(b, random.Random(3), 240)
    texts = [b.tokenizer.decode(ids) for ids, _ in rows]
    later = [
        t
        for t in texts
        if t.count("<|im_start|>user\n<tool_response>") < t.count("<|im_start|>user") - 1
    ]
    assert len(later) > 15  # rows whose prompt holds an earlier question of pi's session
    assert all("<function=bash>" in t for t in later)


def test_a_save_is_asked_in_words_composed_from_parts():
    """Issue 41: six whole sentences taught agent-qwen3_5 the sentences, not the request (no held-out save
    succeeded). Composed, every verb comes with the numbers in each of their forms, or the file first."""
    from agentloop.training.phrasing import SAVE_VERBS, follow_up_question

    rng = random.Random(11)
    asked = [
        follow_up_question(rng, "write", list=[4, 8, 15, 16], name="numbers.txt")
        for _ in range(600)
    ]
    assert len(set(asked)) > 500
    for verb in SAVE_VERBS:
        assert any(re.search(rf"\b{verb}\b", q, re.I) for q in asked), verb
    assert any(re.search(r"numbers\.txt: 4", q) for q in asked)  # the file named first
    assert all(re.search(r"4\D+8\D+15\D+16", q) and "numbers.txt" in q for q in asked)


def test_pis_prompt_in_training_names_pi_in_many_checkouts():
    """pi's prompt names the folder npm put pi in, which is in the reader's checkout: training draws this
    checkout's about half the time, and other plausible ones otherwise, so that no one path is part of what
    the model learned."""
    from agentloop.harnesses.pi.command import PI_CLI
    from agentloop.training.pi_format import pi_folder, system_prompt

    rng = random.Random(12)
    folders = [pi_folder(rng) for _ in range(400)]
    here = PI_CLI.parents[2]
    assert 0.4 < folders.count(here) / len(folders) < 0.6
    others = {f for f in folders if f != here}
    assert len(others) > 30
    assert all(
        f.parts[-3:] == ("node_modules", "@earendil-works", "pi-coding-agent") for f in others
    )
    drawn = next(iter(others))
    assert f"- Main documentation: {drawn}/README.md" in system_prompt(rng, drawn)


def test_a_card_says_which_phases_ran_on_which_cpu():
    """A run resumed on another machine (--resume-after) has phases of two CPUs: the card names each stretch, and
    a run whose phases name no CPU (trained before they did) keeps the old sentence."""
    from agentloop.training.checkpoint import where_trained
    from agentloop.training.train import this_cpu

    assert this_cpu().endswith(("AVX512", "no AVX512"))
    a, b = "AMD EPYC, 2 cores, no AVX512", "Intel Xeon, 2 cores, AVX512"
    phases = [{"minutes": 20.6, "cpu": a}, {"minutes": 30.1, "cpu": a}, {"minutes": 40.0, "cpu": b}]
    assert (
        where_trained(phases)
        == f"about 91 minutes: phases 1-2 (51 min) on {a}; phase 3 (40 min) on {b}"
    )
    assert where_trained(phases[:2]) == f"about 51 minutes on {a}"
    assert where_trained([{"minutes": 3.0}]) == "about 3 minutes on the CPU it was trained on"
