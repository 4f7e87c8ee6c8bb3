"""guarded_http on a real uvicorn with short limits: the guards both servers of the demo server's
process rely on (the endpoint's own attacks are in test_model_endpoint.py, the demo server's in
test_boundary.py). Loopback only."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from agentloop import guarded_http

REQUEST_S = 1.0
MAX = 4


@pytest.fixture(scope="module")
def port():
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http=guarded_http.protocol(REQUEST_S, MAX), log_config=None, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    thread.join(5)


def closed_within(s: socket.socket, seconds: float) -> bool:
    """Whether the server closes `s` within `seconds` (reading and dropping what it answered)."""
    s.settimeout(seconds)
    try:
        while s.recv(1 << 16) != b"":
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:  # aborted: closed all the same
        pass
    return True


GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def test_a_kept_alive_connection_has_the_same_limit_for_its_next_request(port):
    """uvicorn's own timer, keep-alive's, is disarmed by any byte: a second request sent one byte at
    a time held the connection for ever. Here it is cut off at REQUEST_S like the first."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(GET)
    assert s.recv(1 << 16).startswith(b"HTTP/1.1 200")
    start = time.monotonic()
    try:
        for byte in GET[:-1] * 3:  # a request trickled, a byte every 0.1 s, never whole
            s.sendall(bytes([byte]))
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):  # cut off mid-trickle
        pass
    assert closed_within(s, 3 * REQUEST_S) and time.monotonic() - start < 3 * REQUEST_S


def test_a_request_that_comes_whole_in_time_is_answered_after_a_slow_start(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(GET[:5])
    time.sleep(REQUEST_S / 3)
    s.sendall(GET[5:])
    assert s.recv(1 << 16).startswith(b"HTTP/1.1 200")
    s.close()


def test_past_the_bound_the_oldest_waiting_connection_goes_first(port):
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(MAX + 2)]
    for s in held:
        s.sendall(b"GET / HT")
        time.sleep(0.05)
    try:
        assert closed_within(held[0], 0.5) and closed_within(held[1], 0.5)
        fresh = socket.create_connection(("127.0.0.1", port))
        fresh.sendall(GET)
        assert fresh.recv(1 << 16).startswith(b"HTTP/1.1 200")  # served, one more waiter cut
        fresh.close()
    finally:
        for s in held:
            s.close()
