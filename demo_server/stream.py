"""One ordered list of events, written by a worker thread and read as Server-Sent Events by any number of clients.

A run (and a model load) appends its events here as they happen. Every reader starts from the first event,
so a panel that connects late still draws the whole run, and two tabs reading the same run get the same bytes.
A reader that goes away only stops reading: the worker never waits for anyone.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator

KEEP_ALIVE_S = 15.0


def sse(event: dict) -> str:
    """One SSE message: a single `data:` line holding the event's JSON (json.dumps escapes every newline)."""
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n"


class EventLog:
    def __init__(self, end_types: tuple[str, ...]):
        self.events: list[dict] = []
        self.ended = False
        self.end_types = end_types
        self.readers = 0
        self.idle_since = time.monotonic()  # when the last reader left (or the log began)
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
            sent = 0
            while True:
                entry[1].clear()  # cleared before looking, so an append in between still wakes the wait below
                with self._lock:
                    batch, ended = self.events[sent:], self.ended
                sent += len(batch)
                if batch:
                    yield "".join(sse(e) for e in batch)
                if ended:
                    return
                try:
                    await asyncio.wait_for(entry[1].wait(), keep_alive_s)
                except TimeoutError:
                    yield ": keep-alive\n\n"
        finally:
            with self._lock:
                self._wakers.discard(entry)
                self.readers -= 1
                if not self.readers:
                    self.idle_since = time.monotonic()

    def last(self) -> dict | None:
        with self._lock:
            return self.events[-1] if self.events else None
