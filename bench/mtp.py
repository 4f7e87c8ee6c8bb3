"""MTP on agent-gemma4 with its distilled drafter (agent-gemma4-assistant): what drafting buys on this machine.

Held-out questions of the trained kinds (evaluate.held_out), the first step of each, greedy, decoded plain and
drafted in turn. Prints, one a line: tokens per forward pass of the model with MTP (target ≥ 2; plain decoding is
1.0 by definition), the share of guesses kept, whether drafted decoding wrote exactly the plain tokens, and the
ratio of tokens/s drafted ÷ plain. On a GPU a forward pass over seven tokens costs about what one over a single
token does, so fewer passes is faster; on this CPU, with a model this small, the drafter's own passes weigh as
much, and the ratio says what is left of the gain. Both sides are measured in this one run, interleaved.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.harnesses.simple_harness import SYSTEM_WITH_TOOLS  # noqa: E402
from agentloop.model_backends.simple_backend import SimpleBackend  # noqa: E402
from agentloop.model_families import Sampling  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from agentloop.tools import TOOLS  # noqa: E402
from agentloop.training.conversations import TOOL_KINDS  # noqa: E402
from agentloop.training.evaluate import held_out  # noqa: E402

N = 24


def decode(backend, encoded, mtp: bool) -> tuple[list[int], dict, float]:
    start = time.perf_counter()
    events = list(
        backend.generate(
            encoded, Sampling(temperature=0, max_new_tokens=160, mtp=mtp), lambda: False
        )
    )
    seconds = time.perf_counter() - start
    return [e["id"] for e in events if e["type"] == "token"], events[-1], seconds


def main() -> int:
    backend = SimpleBackend(str(MODELS_DIR / "agent-gemma4"), device="cpu")
    backend.load_drafter()
    tools = [TOOLS["run_python"].schema()]
    tasks = [t for t in held_out(N * 2, seed=2_000_003) if t.kind in TOOL_KINDS][:N]
    tokens = forwards = drafted = accepted = same = 0
    plain_s = drafted_s = 0.0
    for t in tasks:
        messages = [
            {"role": "system", "content": SYSTEM_WITH_TOOLS},
            {"role": "user", "content": t.question},
        ]
        encoded = backend.encode(backend.render(messages, tools, False))
        plain_ids, _, s1 = decode(backend, encoded, mtp=False)
        ids, end, s2 = decode(backend, encoded, mtp=True)
        plain_s, drafted_s = plain_s + s1, drafted_s + s2
        tokens += len(ids)
        forwards += end["mtp"]["forwards"]
        drafted += end["mtp"]["drafted"]
        accepted += end["mtp"]["accepted"]
        same += ids == plain_ids
    print(f"mtp_tokens_per_forward {tokens / forwards:.2f}  (target >= 2.0; plain decoding: 1.00)")
    print(f"mtp_guesses_kept {accepted / drafted:.3f}")
    print(f"mtp_same_tokens {same}/{len(tasks)}")
    print(f"mtp_speed_ratio {plain_s / drafted_s:.2f}  (tokens/s drafted / plain, this CPU)")
    return 0 if tokens / forwards >= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
