"""A run: SimpleHarness (or PiHarness, settings.harness "pi") in a worker thread, its events kept in an EventLog for every reader.

The run's model is the shared one (model.py), seen through RunModel: its generate() holds the model lock for the
whole generation, so nothing else runs a forward pass on the same weights meanwhile. Continuations forced for a
run (tests, the book's recordings) wait in the backend's own queue (SimpleBackend.force), one per generation.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterator

from agentloop import media
from agentloop.harnesses import harness_class
from agentloop.harnesses.base import run_reporting_errors
from agentloop.harnesses.settings import RunSettings
from agentloop.sandbox import cleanup, data_folder
from demo_server.conversations import Conversation
from demo_server.stream import EventLog

# A run waiting for the reader (a permission, or Next at a pause) that no client is watching is stopped after
# this long, so a closed tab cannot hold the one model for ever (the next run would be refused until then).
ORPHAN_S = 15.0
# While it waits, each reader is sent this much keep-alive padding a second: one that stopped reading fills its
# socket's buffers (about 4 MB on loopback) in seconds, its send then waits, and it no longer counts as watching.
PROBE_BYTES = 256 * 1024


class RunModel:
    """The backend as one run sees it: the same object, with generate() serialised and model_id the menu's name."""

    def __init__(self, backend, name: str, model_lock: threading.Lock, text_lock: threading.Lock):
        self._backend = backend
        self._model_lock = model_lock
        self._text_lock = text_lock
        self.model_id = name

    def __getattr__(self, attr):
        return getattr(self._backend, attr)

    def render(self, *args, **kwargs) -> str:
        with self._text_lock:
            return self._backend.render(*args, **kwargs)

    def encode(self, prompt: str, parts: list[dict] | None = None):
        # Decoded, or found in memory, before the lock: other tabs never wait on a decode.
        media.load_parts(parts or [])
        with self._text_lock:
            return self._backend.encode(prompt, parts)

    def generate(self, prompt, sampling, should_stop: Callable[[], bool]) -> Iterator[dict]:
        with self._model_lock:
            yield from self._backend.generate(prompt, sampling, should_stop)


class Run:
    def __init__(
        self,
        llm: RunModel,
        question: str,
        settings: RunSettings,
        on_end: Callable[[Run], None],
        orphan_s: float = ORPHAN_S,
        conversation: Conversation | None = None,
        attachments: list[media.Attachment] = (),
    ):
        self.log = EventLog(("run_end",))
        self.attachments = list(attachments)
        # The conversation it continues: its messages so far, and its folder, seen as /data.
        self.conversation = conversation or Conversation(
            "", data_folder.create(prefix="agentloop-run")
        )
        self.harness = harness_class(settings.harness)(
            llm,
            self.conversation.messages,
            question,
            settings,
            self._emit,
            self.conversation.files,
            self.attachments,
        )
        self.id = self.harness.id
        self._on_end = on_end
        self._orphan_s = orphan_s
        self._ended = threading.Event()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def start(self) -> None:
        threading.Thread(target=self._work, name=f"run-{self.id}", daemon=True).start()
        threading.Thread(target=self._watch, name=f"run-{self.id}-watch", daemon=True).start()

    def decide(self, call_id: str, approve: bool) -> bool:
        """Pass the reader's answer on; False when no permission with this call id is waiting."""
        return self.harness.decide(call_id, approve)

    def stop(self) -> None:
        self.harness.stop()

    def next(self, pace: str | None = None) -> bool:
        """The reader's Next, at `pace` from here on when given; False when the run is not paused."""
        return self.harness.reader.next(pace)

    def _emit(self, event: dict) -> None:
        if event["type"] == "run_end":
            # The next question in this conversation reads what this run added, the answer included.
            self.conversation.messages = list(self.harness.messages)
            self._finish()  # the model is free before any reader sees run_end
        self.log.append(event)

    def _work(self) -> None:
        try:
            run_reporting_errors(self.harness)
        finally:
            self._finish()
            if not self.conversation.id:  # a folder no conversation keeps
                cleanup.remove_tree(
                    self.conversation.files
                )  # whatever the code left: deep trees, odd modes
            return_freed_memory()

    def _finish(self) -> None:
        if not self._ended.is_set():
            self._ended.set()
            self._on_end(self)

    def _watch(self) -> None:
        """Stop the run when it waits for the reader (a permission, or Next at a pause) and nobody has been
        reading its events for orphan_s: no stream is open, or each open one has stopped taking what it is
        sent."""
        while not self._ended.wait(1.0 if self._orphan_s >= 2 else self._orphan_s / 2):
            waiting_since = self.harness.reader.waiting_since
            self.log.probe_bytes = PROBE_BYTES if waiting_since is not None else 0
            if waiting_since is None:
                continue
            since = max(waiting_since, self.log.idle_since)
            if (
                self.log.live_readers(self._orphan_s) == 0
                and time.monotonic() - since > self._orphan_s
            ):
                self.harness.stop()
                return


def return_freed_memory() -> None:
    """Hand the allocator's free pages back to the OS. glibc keeps what a thread freed in that thread's arena,
    and every run has threads of its own, so over hundreds of runs RSS grows with memory nobody uses
    (bench/soak.py measures it). Elsewhere than glibc it is skipped."""
    if LIBC is not None:
        LIBC.malloc_trim(0)


def _glibc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


LIBC = _glibc()
