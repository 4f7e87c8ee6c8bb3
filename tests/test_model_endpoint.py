"""ModelEndpoint's boundary (issue 40): what a local process without pi's key can make it hold. On the
real endpoint, over loopback sockets; its timeout and its bound on connections are the constructor's,
short and small here so each test takes seconds. (tests/test_pi.py drives it as pi and an OpenAI
client do.)"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from urllib.parse import urlsplit

import httpx
import pytest

from agentloop.harnesses.model_endpoint import MAX_BODY, ModelEndpoint
from agentloop.harnesses.settings import RunSettings

REQUEST_S = 1.0  # the endpoint's: seconds a connection has to send its whole request
MAX_CONNECTIONS = 8  # the endpoint's: connections open at once
WAIT_S = 30  # the most a test waits for what should come after REQUEST_S: a guard, not a measure
REQUEST_LINE = b"POST /v1/chat/completions HTTP/1.1\r\n"


@pytest.fixture
def endpoint(agent_qwen3_5):
    ep = ModelEndpoint(
        agent_qwen3_5,
        RunSettings(temperature=0, max_new_tokens=8),
        lambda e: None,
        request_s=REQUEST_S,
        max_connections=MAX_CONNECTIONS,
    )
    ep.start()
    yield ep
    ep.close()


def connect(ep: ModelEndpoint, first: bytes = b"") -> socket.socket:
    url = urlsplit(ep.base_url)
    s = socket.create_connection((url.hostname, url.port))
    s.sendall(first)
    return s


def closed_by_server(s: socket.socket, wait_s: float) -> bool:
    """True once the server has closed its end: a read finds the end (or its reset) within wait_s."""
    s.settimeout(wait_s)
    try:
        return s.recv(65536) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def answer_then_close(s: socket.socket) -> bytes:
    """All the server sends before it closes the connection (nothing more is sent from here)."""
    s.settimeout(WAIT_S)
    got = b""
    while part := s.recv(65536):
        got += part
    return got


def head(ep: ModelEndpoint, key: str | None, length: int) -> bytes:
    """A request's head with this key and Content-Length; its body never follows."""
    lines = [REQUEST_LINE.decode().strip(), f"Host: {urlsplit(ep.base_url).netloc}"]
    lines += [f"Authorization: Bearer {key}"] if key else []
    lines += ["Content-Type: application/json", f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def server_sockets(ep: ModelEndpoint) -> int:
    """How many connections the endpoint's side holds open: this process's sockets whose local port
    is the endpoint's (the test's own client sockets have it as their remote port)."""
    port = f"{urlsplit(ep.base_url).port:04X}"
    ours = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed since it was listed
            ours.add(os.readlink(f"/proc/self/fd/{fd}"))
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    # Columns: local address, remote address, state (0A: listening) ..., inode.
    return sum(
        1 for r in rows if r[1].endswith(":" + port) and r[3] != "0A" and f"socket:[{r[9]}]" in ours
    )


def completion(ep: ModelEndpoint) -> tuple[int, list[str]]:
    body = {"stream": True, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    headers = {"Authorization": f"Bearer {ep.secret}"}
    with httpx.stream("POST", ep.base_url + "/chat/completions", json=body, headers=headers) as r:
        return r.status_code, [line for line in r.iter_lines() if line.startswith("data: ")]


def test_idle_connections_hold_no_threads_and_few_descriptors_and_are_closed(endpoint):
    # What an attacker did (300 here, 1,000 then): sockets that each sent a request line, and no more.
    threads = threading.active_count()
    idle = [connect(endpoint, REQUEST_LINE) for _ in range(300)]
    # pi is still served: its connection takes the place of the oldest idle one.
    status, lines = completion(endpoint)
    assert status == 200 and lines[-1] == "data: [DONE]" and json.loads(lines[0][6:])["choices"]
    # No thread per connection (the one generation thread may still be on its way out) ...
    assert threading.active_count() <= threads + 1
    # ... and the endpoint's side holds at most MAX_CONNECTIONS of them open ...
    assert server_sockets(endpoint) <= MAX_CONNECTIONS
    # ... and closes every one once its time to send a request is up.
    assert all(closed_by_server(s, WAIT_S) for s in idle)
    assert server_sockets(endpoint) == 0
    for s in idle:
        s.close()


def test_a_request_sent_a_byte_at_a_time_is_cut_off(endpoint):
    # Each byte would have put off uvicorn's only timer; here the whole request has REQUEST_S.
    pace_s = REQUEST_S / 10
    slow = connect(endpoint, REQUEST_LINE + b"X-Trickle: ")
    for _ in range(int(WAIT_S / pace_s)):
        if closed_by_server(slow, pace_s):
            break
        try:
            slow.sendall(b"a")
        except (BrokenPipeError, ConnectionResetError):
            break
    else:
        pytest.fail(f"a byte every {pace_s} s for {WAIT_S} s, and the connection is still open")
    slow.close()


@pytest.mark.parametrize("key", [None, "guessed"])
def test_a_caller_without_the_key_is_refused_before_its_body(endpoint, key):
    # A terabyte announced and never sent: the answer comes without it, and the connection ends.
    s = connect(endpoint, head(endpoint, key, 10**12))
    status_line, _, rest = answer_then_close(s).partition(b"\r\n")
    assert status_line.split()[1] == b"401" and b"missing or wrong API key" in rest
    s.close()


def test_a_body_over_max_body_is_refused_before_it_is_read(endpoint):
    s = connect(endpoint, head(endpoint, endpoint.secret, MAX_BODY + 1))
    status_line, _, rest = answer_then_close(s).partition(b"\r\n")
    assert status_line.split()[1] == b"413" and b"at most" in rest
    s.close()
