"""A trained checkpoint on disk: its weights in bfloat16 beside the base checkpoint's other files, the training
record (training.json) and the model card (README.md). train.py and distill.py both write through
write_checkpoint, so a rewrite of a committed checkpoint is byte-identical.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from agentloop.model_backends.simple_backend import SimpleBackend


def save(backend: SimpleBackend, out: Path, recipe: dict) -> Path:
    """The trained weights in bfloat16, beside the base checkpoint's other files and a model card."""
    earlier = backend.folder / "training.json"
    phases = json.loads(earlier.read_text())["phases"] if earlier.exists() else []
    recipe = {"phases": [*phases, recipe]}
    return write_checkpoint(
        backend.model, backend.folder, out, recipe, model_card(backend, out.name, recipe)
    )


OWN_FILES = ("examples.json", "generation_config.json")


def write_checkpoint(model, base: Path, out: Path, record: dict, card: str) -> Path:
    """`model`'s weights in bfloat16 in a fresh folder `out`, beside `base`'s other files (generation settings,
    tokenizer, chat template), with the training record and the model card."""
    assert out.resolve() != base.resolve(), (
        "write into a new folder: the base's files are copied from"
    )
    # What a retrained model keeps of the folder it replaces: files written by hand or by the evaluation, not
    # by training (the questions its panel offers; the sampling it was measured at).
    kept = {name: (out / name).read_bytes() for name in OWN_FILES if (out / name).is_file()}
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)  # the base's own is the one to keep
    for f in base.iterdir():
        if (
            f.is_file()
            and f.suffix != ".safetensors"
            and f.name not in ("config.json", "training.json", "README.md")
        ):
            shutil.copyfile(f, out / f.name)
    for name, data in kept.items():
        (out / name).write_bytes(data)
    (out / "training.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    (out / "README.md").write_text(card)
    return out


COMPOSED = """
  The phases marked "composed" also ask division, powers, squares, cubes and a word's length, word each
  question from parts (`agentloop/training/phrasing.py`: openers, frames, cores, ways of typing), render it
  with the family's faithful chat template, and train each step's prompt as the loop sends it (a row per
  step where the template's history is not the model's own text). In the phases marked "word- and
  verb-first", questions also come in word-first and verb-first frames ("bubble: how many b's?", "multiply 17
  by 23"), greetings are composed, and the numbers have one to five digits; in those marked "chat with the
  counting cues", greetings also carry the counting kinds' cues ("how's", "it's", thanks of many shapes) in
  sentences that ask for nothing to count; in those marked "sorts without an order word", half the ascending
  sorts name no order ("Put 7, 2, 9 in order.") and sorting has more frames."""
SESSIONS_TEXT = """ In the phases with conversations, some are two to four questions in a row
  (`agentloop/training/sessions.py`): follow-ups on the last result, denied calls answered without a number, tool
  errors answered honestly or with a corrected call, numbers written to /data and read back later."""
PI_TEXT = """ In the phases with pi's format, some steps are single questions through pi's own system
  prompt and tools (`agentloop/training/pi_format.py`), answered with pi's bash tool running `python3 -c`."""
PLAIN = """ Questions in the plain wording take every table's first form
  with nothing around it ("What is 17 * 23?"), so the values always stand in the same place."""
IN_PARTS = """ A step computed in parts sorts its rows by length and computes
  them in that many pieces, each padded only to its own longest row, their gradients added: the same step,
  with less padding computed."""


def is_composed(p: dict) -> bool:
    """Whether a phase worded its questions from parts (train.PHRASING) rather than from fixed sentences."""
    return p.get("phrasing", "").startswith("composed")


def phase_text(p: dict) -> str:
    composed = is_composed(p)
    rows = "rows" if composed else "conversations"  # a composed phase's batch is rows (data.rows)
    text = f"{p['steps']} steps of {p['batch_size']} {rows} at learning rate {p['lr']}, seed {p['seed']}"
    if p.get("repeat_share"):
        text += f", {p['repeat_share']:.0%} of tool questions asking to check twice"
    if p.get("plain_share"):
        text += f", {p['plain_share']:.0%} of questions in the plain wording"
    if p.get("sort_share"):
        text += f", {p['sort_share']:.0%} of questions sorts on top of the usual mix"
    if p.get("descending_share"):
        text += f", {p['descending_share']:.0%} of sorts largest first"
    if p.get("session_share"):
        text += (
            f", {p['session_share']:.0%} of conversations two to four questions in a row (follow-ups, denials,"
            " tool errors, a file written and read back)"
        )
    if p.get("pi_share"):
        text += (
            f", {p['pi_share']:.0%} of steps questions through pi's own system prompt and bash tool"
        )
    if p.get("parts"):
        text += f", each step computed in {p['parts']} parts"
    return text + (f", {p['phrasing']}" if composed else "")


def where_trained(phases: list[dict]) -> str:
    """The run's minutes, and the CPUs its phases name (train.this_cpu): a run resumed on another machine
    (--resume-after) says which phases ran where."""
    minutes = f"about {sum(p['minutes'] for p in phases):.0f} minutes"
    if not any(p.get("cpu") for p in phases):  # trained before phases named their CPU
        return f"{minutes} on the CPU it was trained on"
    runs: list[list] = []  # [first phase, last phase, cpu, minutes] for each stretch on one CPU
    for i, p in enumerate(phases, 1):
        if runs and runs[-1][2] == p.get("cpu"):
            runs[-1][1], runs[-1][3] = i, runs[-1][3] + p["minutes"]
        else:
            runs.append([i, i, p.get("cpu"), p["minutes"]])
    if len(runs) == 1:
        return f"{minutes} on {runs[0][2]}"
    parts = [
        f"{f'phase {a}' if a == b else f'phases {a}-{b}'} ({m:.0f} min) on {cpu or 'an unrecorded CPU'}"
        for a, b, cpu, m in runs
    ]
    return f"{minutes}: {'; '.join(parts)}"


def model_card(backend: SimpleBackend, name: str, recipe: dict) -> str:
    """What this checkpoint is, for people: the model card the Hub would show."""
    base = f"tiny-{backend.family.key}"  # where the first phase started, whatever folder this phase started from
    composed = any(is_composed(p) for p in recipe["phases"])
    plain = any(p.get("plain_share") for p in recipe["phases"])
    in_parts = any(p.get("parts") for p in recipe["phases"])
    sessions = any(p.get("session_share") for p in recipe["phases"])
    through_pi = any(p.get("pi_share") for p in recipe["phases"])
    drafter = (
        f", then distills its MTP drafter, {name}{backend.family.drafter_suffix}"
        if backend.family.drafter_suffix
        else ""
    )
    return f"""# {name}

A toy: {backend.family.name}'s architecture ({backend.config["architectures"][0]}) at a tiny size, trained on this
project's CPU for the agentloop book, so that the book's offline panels show a real loop: the model asks for
run_python, reads the result and answers with it, every token its own. It is not a language model in any useful
sense outside that loop.

- **Base**: `{base}`, built by `agentloop models build-tiny` (random weights, a BPE tokenizer
  trained on the project's own text, the family's chat template).
- **Data**: synthetic conversations from `agentloop/training/conversations.py`, rendered through this model's chat
  template with the system prompt and the run_python schema that SimpleHarness sends: arithmetic on numbers
  of one to five digits, counting a letter in a word (real and made-up words), unit conversion, sorting a list of numbers, the
  days between two dates, counting the lines of a file in /data; greetings and definitions answered without a
  tool; in the later phases, some questions that ask to check twice, where the model repeats its call and the loop
  refuses the repeat. A quarter of the batches with thinking on. Loss on the model's own tokens only.{COMPOSED if composed else ""}{PLAIN if plain else ""}{IN_PARTS if in_parts else ""}{SESSIONS_TEXT if sessions else ""}{PI_TEXT if through_pi else ""}
- **Recipe**: `training.json`: {"; then ".join(phase_text(p) for p in recipe["phases"])}
  (AdamW, cosine schedule); {where_trained(recipe["phases"])}.
- **What it cannot do**: anything else. Questions of other kinds, other tools (list_files, read_file), {"longer" if sessions else "long"}
  conversations{" (more than four questions)" if sessions else ""}, other languages: it will still write something, usually a run_python call.
- **Measure it**: `agentloop models eval-tiny --model {name}` runs held-out questions{" and conversations" if sessions else ""} through the real loop{" (and through real pi)" if through_pi else ""} and
  prints how often the call is well-formed, the code correct and the answer right.
- **Retrain it**: `agentloop models build-tiny && agentloop models train-tiny --family {backend.family.key}`
  rebuilds it from the seed, every phase on today's data, in one run{drafter}.
"""
