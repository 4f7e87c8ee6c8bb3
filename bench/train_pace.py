"""How fast this machine trains each default model, against the machine whose minutes its training.json holds.

A model's training.json gives each phase's minutes on the machine that trained it, alone, on two threads. The
machines drawn here differ by half again in speed, so two cards' minutes compare only through a common machine.
This runs the first phase of each family's recipe (RECIPES, the same settings, from tiny-<family>, two threads)
for a sample of its steps, times the steps after the first (which pays for warming up), and prints for each
family its steps a minute here and in the recorded first phase, their ratio, and the whole recipe's recorded
minutes scaled by that ratio: what training it would take here. Both families are measured in this one run, so
the last line, agent-qwen3_5's recipe in the minutes of the machine that trained agent-gemma4, holds whatever
machine runs this. Run it with nothing else running: `python bench/train_pace.py`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.training.train import RECIPES, train  # noqa: E402

# About two minutes of each on a slow machine; the first step is not timed.
SAMPLE = {"qwen3_5": 61, "gemma4": 151}


def recorded_phases(family: str) -> list[dict]:
    """The phases agent-<family>'s training.json records, each with its minutes."""
    return json.loads((MODELS_DIR / f"agent-{family}" / "training.json").read_text())["phases"]


def steps_per_minute(family: str) -> float:
    """The first phase's settings for SAMPLE[family] steps; steps 2 to the last, timed from train's own log."""
    stamps: dict[int, float] = {}

    def log(line: str) -> None:
        if line.startswith("step "):  # "step 10/61  loss …", logged at step 1 and every tenth
            stamps[int(line.split()[1].split("/")[0])] = time.perf_counter()

    phase = {**RECIPES[family][0], "steps": SAMPLE[family]}
    with tempfile.TemporaryDirectory() as tmp:
        train(str(MODELS_DIR / f"tiny-{family}"), Path(tmp) / "out", threads=2, log=log, **phase)
    last = max(stamps)
    return (last - 1) / ((stamps[last] - stamps[1]) / 60)


def main() -> int:
    here_over_recorded, minutes_there = {}, {}
    for family in ("qwen3_5", "gemma4"):
        phases = recorded_phases(family)
        recorded = phases[0]["steps"] / phases[0]["minutes"]
        here = steps_per_minute(family)
        here_over_recorded[family] = here / recorded
        minutes = minutes_there[family] = sum(p["minutes"] for p in phases)
        print(
            f"agent-{family}: {here:.1f} steps/min here, {recorded:.1f} in its recorded first phase: "
            f"{here / recorded:.2f}x; its recipe, {minutes:.1f} min there, about "
            f"{minutes * recorded / here:.0f} min here"
        )
    # The speed of the machine that trained Qwen over that of the one that trained Gemma, each against this one
    # (assuming the two differ alike on both models' steps).
    scale = here_over_recorded["gemma4"] / here_over_recorded["qwen3_5"]
    minutes = minutes_there["qwen3_5"] * scale
    print(
        f"agent-qwen3_5's recipe on the machine that trained agent-gemma4: about {minutes:.0f} min"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
