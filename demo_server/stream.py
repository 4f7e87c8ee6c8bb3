"""One ordered list of events, written by a worker thread and read as Server-Sent Events by any number of clients.

A run (and a model load) appends its events here as they happen. Every reader starts from the first event,
so a panel that connects late still draws the whole run, and two tabs reading the same run get the same bytes.
A reader that goes away only stops reading: the worker never waits for anyone.

A reader can also stay connected and stop reading (a script that opened the stream and went on to other
things). TCP does not say so until the bytes sent to it fill the socket's buffers (about 4 MB on loopback);
then the send waits. So while someone asks (`probe_bytes`, set by a run waiting for a permission) every
keep-alive comment carries that much padding each PROBE_EVERY_S, and a reader whose send has waited longer
than a given time is not counted as live (live_readers). Between runs' permissions nothing is padded.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from contextlib import contextmanager

from demo_server.zh_hans import with_zh_hans

KEEP_ALIVE_S = 15.0
PROBE_EVERY_S = 1.0


def sse(event: dict) -> str:
    """One SSE message: a single `data:` line holding the event's JSON (json.dumps escapes every newline), each
    {en, zh} text in it with its zh-Hans (demo_server/zh_hans.py)."""
    return f"data: {json.dumps(with_zh_hans(event), ensure_ascii=False)}\n\n"


class EventLog:
    def __init__(self, end_types: tuple[str, ...]):
        self.events: list[dict] = []
        self.ended = False
        self.end_types = end_types
        self.readers = 0
        self.idle_since = time.monotonic()  # when the last reader left (or the log began)
        # Padding per keep-alive, PROBE_EVERY_S apart, while a run asks who still reads
        self.probe_bytes = 0
        self._sending_since: dict[object, float] = {}  # reader → when the send it is in began
        self._lock = threading.Lock()
        self._wakers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def append(self, event: dict) -> None:
        """Add an event (from any thread) and wake every reader. An event after the end is dropped."""
        with self._lock:
            if self.ended:
                return
            self.events.append(event)
            self.ended = event["type"] in self.end_types
            wakers = list(self._wakers)
        for loop, wake in wakers:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # that reader's event loop has closed
                pass

    async def stream(self, keep_alive_s: float = KEEP_ALIVE_S) -> AsyncIterator[str]:
        """Every event from the first, as SSE text, until the end event; a comment line while nothing happens."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._wakers.add(entry)
            self.readers += 1
        try:
            sent, quiet_since = 0, time.monotonic()
            while True:
                entry[
                    1
                ].clear()  # cleared before looking, so an append in between still wakes the wait below
                with self._lock:
                    batch, ended = self.events[sent:], self.ended
                sent += len(batch)
                if batch:
                    with self._sending(entry):
                        yield "".join(sse(e) for e in batch)
                    quiet_since = time.monotonic()
                if ended:
                    return
                try:
                    await asyncio.wait_for(entry[1].wait(), min(keep_alive_s, PROBE_EVERY_S))
                except TimeoutError:
                    padding = self.probe_bytes
                    if padding or time.monotonic() - quiet_since >= keep_alive_s:
                        with self._sending(entry):
                            yield ": keep-alive" + " " * padding + "\n\n"
                        quiet_since = time.monotonic()
        finally:
            with self._lock:
                self._wakers.discard(entry)
                self.readers -= 1
                if not self.readers:
                    self.idle_since = time.monotonic()

    @contextmanager
    def _sending(self, reader):
        """Marks the reader as in a send until the server has handed its bytes on (the yield returns)."""
        with self._lock:
            self._sending_since[reader] = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._sending_since.pop(reader, None)

    def live_readers(self, stuck_s: float) -> int:
        """Readers connected, less those whose send has waited more than stuck_s (they stopped reading)."""
        now = time.monotonic()
        with self._lock:
            stuck = sum(1 for since in self._sending_since.values() if now - since > stuck_s)
            return self.readers - stuck

    def last(self) -> dict | None:
        with self._lock:
            return self.events[-1] if self.events else None
