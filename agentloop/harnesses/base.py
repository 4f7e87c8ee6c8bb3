"""What every harness is to its callers (the terminal, the demo server, the tests): the `Harness` protocol, and
the reader's side of a run that every harness shares, `Reader`. A harness is made with (llm, history, question,
settings, emit, files, attachments), sends the events of events.py through `emit` as it runs, and is driven from
other threads by `decide` (the reader's answer to a `permission` event) and `stop`. How it runs its loop is its
own: SimpleHarness runs ours, PiHarness has pi run its. What the reader does is the same in both, so it is one
object a harness holds, not a base class it inherits a loop from: `Reader` asks for permission and waits for the
answer, takes Stop, keeps the time limit, and holds the run at the reader's pace (settings.pace; pace.py).

The registry every caller reads is `harnesses.HARNESSES` (__init__.py). Left out: several runs in one harness
(each run is a new harness; a conversation continues through `history`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from agentloop import media
from agentloop.harnesses.settings import SLOW_S, RunSettings
from agentloop.model_backends import Backend


class Harness(Protocol):
    id: str  # the run's id, as run_start gives it
    messages: list[dict]  # the conversation, this run's turns included: what a follow-up continues
    step: int  # the step running now (0 before the first), so a failure can name it
    reader: Reader
    takes_attachments: bool  # whether attached media can be parts of its question

    def __init__(
        self,
        llm: Backend | None,
        history: list[dict],
        user_text: str,
        settings: RunSettings,
        emit: Callable[[dict], None],
        files: Path | None = None,
        attachments: list[media.Attachment] = (),
    ): ...

    def run(self) -> None:
        """The whole run, from run_start to run_end, in the calling thread."""

    def emit(self, kind: str, **fields) -> None: ...

    def decide(self, call_id: str, approve: bool) -> bool: ...

    def stop(self) -> None: ...


class Reader:
    """The reader's side of one run: their answer to each tool call, their Stop and pace, and the run's time limit,
    which ends a wait as Stop does. Both harnesses ask through `ask`, and hold and check should_stop at each stage."""

    def __init__(self, settings: RunSettings, emit: Callable[..., None]):
        self.settings = settings
        self.emit = emit  # the harness's: its events carry its clock and the line that sent them
        self.started = time.perf_counter()
        self._stop = threading.Event()
        self._decisions: dict[str, bool] = {}
        self._decided = threading.Condition()  # every wait's: an answer, Next and Stop wake it
        # The call whose permission waits for an answer, and since when the run waits for the reader (or its Next).
        self.waiting_for: str | None = None
        self.waiting_since: float | None = None
        self.pace = settings.pace  # one of settings.PACES; the reader's Next may change it
        self.paused: dict | None = None  # the stage a stepped run waits before: its one record

    # -- from other threads -----------------------------------------------------------------------------------------

    def decide(self, call_id: str, approve: bool) -> bool:
        """The reader's answer to a permission event (from another thread); False, and nothing decided, when the
        loop is not waiting for that call."""
        with self._decided:
            if call_id != self.waiting_for:
                return False
            self.waiting_for = self.waiting_since = None  # one answer per call
            self._decisions[call_id] = approve
            self._decided.notify_all()
        return True

    def stop(self) -> None:
        """End the run from another thread: generation stops before its next token, any wait for the reader at once."""
        self._stop.set()
        with self._decided:
            self._decided.notify_all()

    # -- from the loop ----------------------------------------------------------------------------------------------

    def ask(self, step: int, call_id: str) -> bool | None:
        """Send `permission` and wait for the reader's decision; None if the run is stopped meanwhile."""
        if not self.settings.auto_approve:
            self._waiting(call_id)  # before the event: a reader may answer as soon as it sees it
        self.emit("permission", step=step, call_id=call_id)
        if self.settings.auto_approve:
            approved, by = True, "auto"
        else:
            with self._decided:  # woken by decide() or stop(), or when the time limit runs out
                self._decided.wait_for(
                    lambda: call_id in self._decisions or self.should_stop(),
                    timeout=self.time_left(),
                )
            self._waiting(None)
            if call_id not in self._decisions:
                return None
            approved, by = self._decisions[call_id], "reader"
        self.emit("decision", step=step, call_id=call_id, approved=approved, by=by)
        if approved:  # step by step, the call runs when the reader presses Next; Stop meanwhile: it never runs
            self.hold("call", step, call_id=call_id)
            if self.should_stop():
                return None
        return approved

    # -- the pace (settings.pace; pace.py) --------------------------------------------------------------------------

    def next(self, pace: str | None = None) -> bool:
        """The reader's Next (from another thread): the stage the run waits before goes on, at `pace` from here
        on when one is given ("full": no more holds). False, and nothing changed, when the run is not paused."""
        with self._decided:
            if self.paused is None:
                return False
            self.paused = None
            self.pace = pace or self.pace
            self._decided.notify_all()
        return True

    def hold(self, stage: str, step: int, **where) -> None:
        """Wait before `stage` of step `step` as the pace says: "slow", SLOW_S before each token; "step", until
        the reader's Next, having sent `paused` (with `where`: a token's index, a call's id). Stop and the time
        limit end either wait at once, as they end a wait for permission; the caller then asks should_stop.
        The wait counts toward the time limit as that one does: the limit bounds how long a run holds the one
        model, and a held run holds it."""
        if self.pace == "full" or self.should_stop():
            return
        if self.pace == "slow":
            if stage == "token":
                left = self.time_left()
                with self._decided:
                    self._decided.wait_for(
                        self.should_stop, SLOW_S if left is None else min(SLOW_S, left)
                    )
            return
        paused = {"step": step, "stage": stage, **where}
        with self._decided:  # before the event: a reader may press Next as soon as it sees it
            self.paused, self.waiting_since = paused, time.monotonic()
        self.emit("paused", **paused)
        with self._decided:
            self._decided.wait_for(
                lambda: self.paused is not paused or self.should_stop(), timeout=self.time_left()
            )
            self.paused = self.waiting_since = None

    def should_stop(self) -> bool:
        return self._stop.is_set() or self.out_of_time()

    def out_of_time(self) -> bool:
        limit = self.settings.time_limit_s
        return limit is not None and self.elapsed() > limit

    def time_left(self) -> float | None:
        """Seconds until the time limit (None: no limit), so a wait can end when the limit does."""
        limit = self.settings.time_limit_s
        return None if limit is None else max(0.0, limit - self.elapsed())

    def why_stopped(self) -> str:
        return "user_stopped" if self._stop.is_set() else "time_limit"

    def stopped(self) -> bool:
        """Whether the reader pressed Stop (the time limit aside)."""
        return self._stop.is_set()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def ms(self) -> float:
        """The run's time so far, in milliseconds, as run_end and each event's t_ms give it."""
        return round(self.elapsed() * 1000, 1)

    def _waiting(self, call_id: str | None) -> None:
        with self._decided:
            self.waiting_for = call_id
            self.waiting_since = time.monotonic() if call_id else None


def run_reporting_errors(harness: Harness) -> None:
    """harness.run(), with any failure inside it sent as an `error` event and a `run_end`, so a reader sees it."""
    try:
        harness.run()
    except Exception as e:
        # A backend that knows what went wrong (VLLMBackend's ServerError) says it in both languages itself.
        step = {"step": harness.step} if harness.step else {}  # drawn in the step it failed in
        harness.emit(
            "error",
            message={
                "en": f"The run failed: {getattr(e, 'en', f'{type(e).__name__}: {e}')}",
                "zh": f"執行失敗：{getattr(e, 'zh', f'{type(e).__name__}: {e}')}",
            },
            **step,
        )
        harness.emit(
            "run_end", stop_reason="error", final="", steps=harness.step, ms=harness.reader.ms()
        )
