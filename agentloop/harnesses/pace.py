"""A run at the reader's pace (settings.pace, chapter 14), with the model's timings kept honest.

A step holds for the reader before its prefill, before each token and before its parse; the Reader (base.py)
holds before an approved call too, and does the waiting itself: `Reader.hold` waits SLOW_S before each token
("slow"), or sends `paused` and waits for the reader's Next ("step"), and Stop or the time limit ends either
wait at once. This module puts those holds into the generation (`paced`, which take_step runs) and takes the
time they kept the run out of the backend's timings, so the prefill's ms, the decode's ms and tok/s are the
model's time alone. The backend times itself (`prefill` ms, `done` decode_ms); a hold before a token happens
inside its timed decode, where it asks should_stop, so `paced` times each hold and subtracts it; the hold
before the prefill comes before generate() starts its clock.

With MTP (chapter 10) a round's `draft` comes before the hold of its first token: the reader sees what the
drafter guessed, then each token the model kept, one Next at a time (each token is a stage of its own).

A backend whose generation runs on elsewhere (vLLM: the server goes on generating while the run is held;
holding only paces what the run shows) has `runs_ahead`: the time its decode took is then not known here,
and a step held mid-generation reports decode_ms and tok_per_s as None. Left out: pi's own models, whose
text comes without tokens from pi's provider; the demo server refuses a pace other than "full" for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentloop.model_backends import Backend, Encoded
from agentloop.model_families import Sampling

# hold(stage, step, **where): wait before a stage as the run's pace says (Reader.hold).
Hold = Callable[..., None]


def full_speed(stage: str, step: int, **where) -> None:
    """The hold of a run nobody paces (a caller without a Reader): no wait at all."""


class Held:
    """The seconds the reader's holds took since the last take()."""

    def __init__(self):
        self.s = 0.0

    @contextmanager
    def timing(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.s += time.perf_counter() - start

    def take(self) -> float:
        s, self.s = self.s, 0.0
        return s


def paced(
    llm: Backend,
    step: int,
    encoded: Encoded,
    sampling: Sampling,
    should_stop: Callable[[], bool],
    hold: Hold,
) -> Iterator[dict]:
    """llm.generate(encoded, sampling, …)'s events at the run's pace: a hold before the prefill, and one
    before each token, where the backend asks should_stop. The time held is left out of the prefill's `ms`
    and of `done`'s decode_ms and tok_per_s. Stopped while held before the prefill, no prefill runs: the
    one event is a `done` that says so."""
    hold("prefill", step)
    if should_stop():
        yield stopped_before_prefill()
        return
    held = Held()
    tokens = 0  # the tokens yielded so far: the index of the one the backend asks about next

    def gate() -> bool:
        """The backend's should_stop: the reader's hold before the token, then Stop."""
        with held.timing():
            hold("token", step, index=tokens)
        return should_stop()

    for ev in llm.generate(encoded, sampling, gate):
        if ev["type"] == "prefill":  # holds before it fell inside its ms (a backend may ask first)
            ev = {**ev, "ms": round(max(0.0, ev["ms"] - held.take() * 1000), 1)}
        elif ev["type"] == "token":
            tokens += 1
        elif ev["type"] == "done":
            ev = without_held(ev, held.take(), llm.runs_ahead)
        yield ev


def without_held(done: dict, held_s: float, runs_ahead: bool) -> dict:
    """A `done` event with `held_s` seconds of holds taken out of its decode time, and tok/s again from
    what is left; both None for a backend that `runs_ahead` (its decode went on while the run was held)."""
    if held_s <= 0:
        return done
    if runs_ahead:
        return {**done, "decode_ms": None, "tok_per_s": None}
    decode_s = max(0.0, done["decode_ms"] / 1000 - held_s)
    n = done["n_tokens"]
    return {
        **done,
        "decode_ms": round(decode_s * 1000, 1),
        "tok_per_s": round(n / decode_s, 1) if decode_s > 0 and n else None,
    }


def stopped_before_prefill() -> dict:
    """The `done` of a step stopped before its prefill ran: nothing generated, nothing timed."""
    return {
        "type": "done",
        "finish": "user_stopped",
        "stop_piece": None,
        "n_tokens": 0,
        "decode_ms": 0.0,
        "tok_per_s": None,
        "mtp": None,
        "raw": "",
    }
