"""uvicorn's HTTP/1.1 with the two guards it lacks, for both servers in the demo server's process: the
demo server itself and the model endpoint pi calls (harnesses/model_endpoint.py).

Any local process can reach loopback. Measured on uvicorn 0.54.0: a connection that sent nothing,
half a request line, or a byte every half second was never closed (its one timer is keep-alive's,
armed after a response and disarmed by any byte), and 1,000 such held 1,000 file descriptors; past
the process's limit the server stopped answering and logged EMFILE in a loop. `limit_concurrency`
only answers 503 once a whole request is in, and then to everyone. So here:

- a connection has `request_s` seconds to send each whole request: from when it opens, and again from
  the end of each response, while a kept-alive connection waits for the next;
- at most `max_connections` are open at once: one more closes the oldest that is still sending a
  request or idling between requests, never one being answered (a run's event stream, say); if every
  other one is being answered, the new one is closed instead.

A connection cut off is aborted unanswered: its request never came whole. Per-request warnings (a
malformed request answered 400) go to a logger that keeps only errors, so a client in a loop cannot
grow the log. Follows: nginx's client_header_timeout and worker_connections, the usual answer to
slowloris. Left out: a bound on how slowly a response is read (the kernel's send buffer holds what
is written, and the server's writes wait on flow control, not a thread).
"""

from __future__ import annotations

import asyncio
import functools
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

QUIET = logging.getLogger(__name__)
QUIET.setLevel(logging.ERROR)


class GuardedH11Protocol(H11Protocol):
    def __init__(self, *args, request_s: float, max_connections: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.request_s = request_s
        self.max_connections = max_connections
        self.logger = QUIET
        # Off here, not with Config(access_log=False): that would empty the process-wide
        # "uvicorn.access" logger, which the other server in this process may write to.
        self.access_log = False
        self.opened = 0.0
        self.deadline: asyncio.TimerHandle | None = None  # set while a request is awaited

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.opened = self.loop.time()
        self._arm()
        # Counted without those already closing: they are gone by the loop's next turn.
        staying = [c for c in self.connections if not c.transport.is_closing()]
        if len(staying) > self.max_connections:
            awaited = [c for c in staying if c.deadline is not None]  # self among them
            min(awaited, key=lambda c: c.opened).cut_off()

    def handle_events(self) -> None:
        super().handle_events()
        if self.deadline is not None and self.conn.their_state in (h11.DONE, h11.MUST_CLOSE):
            self._disarm()  # the whole request came in time

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()  # kept alive: the next request has request_s too, however it trickles

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        # uvicorn's would wait for a request still coming; a server shutting down wants it gone.
        if self.deadline is not None:
            self.cut_off()
        else:
            super().shutdown()

    def cut_off(self) -> None:
        """Drop the connection at once, unanswered."""
        self._disarm()
        self.transport.abort()

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(self.request_s, self.cut_off)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None


def protocol(request_s: float, max_connections: int) -> functools.partial:
    """What uvicorn.Config takes as `http=`."""
    return functools.partial(
        GuardedH11Protocol, request_s=request_s, max_connections=max_connections
    )
