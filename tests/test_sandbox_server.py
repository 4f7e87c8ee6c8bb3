"""The sandbox through the demo server, end to end (issue 11, attacks 1 and 3 as the issue found
them).

A real uvicorn with the real tiny model; the model's tool call is forced (the server's testing aid),
the harness and the sandbox do the rest. The server holds a secret in its session keyring, made when
the test starts; the forced code tries to read it and leaves a 3,000-deep tree in /data.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from demo_server.client import Client
from tests.conftest import TINY, demo_server
from tests.test_server import run_through

KEYCTL, ADD_KEY, SESSION = 250, 248, -3  # x86_64 numbers; KEY_SPEC_SESSION_KEYRING

STEAL = (  # short: each character is a forced token the tiny model scores
    "import ctypes as c,os\n"
    "l=c.CDLL(None,use_errno=1);l.syscall.restype=c.c_long;b=c.create_string_buffer(99)\n"
    "n=l.syscall(250,11,l.syscall(250,10,-3,b'user',b'NAME',0),b,99)\n"
    "print('read',n,os.strerror(c.get_errno()),b.raw[:max(n,0)])\n"
    "for _ in range(3000):os.mkdir('a');os.chdir('a')\n"
    "print('deep')\n"
)


@pytest.fixture(scope="module")
def secret_server(tmp_path_factory):
    """(key name, secret, server): the secret is in the session keyring of every thread the server
    starts, since it is joined and filled before the server's first thread exists."""
    if os.uname().machine != "x86_64":
        pytest.fail("this test calls keyctl by its x86_64 number")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    assert libc.syscall(KEYCTL, 1, None) > 0  # KEYCTL_JOIN_SESSION_KEYRING, a new anonymous one
    name, secret = f"k{uuid.uuid4().hex[:6]}", uuid.uuid4().hex.encode()
    key = libc.syscall(ADD_KEY, b"user", name.encode(), secret, len(secret), SESSION)
    assert key > 0
    with demo_server(
        tmp_path_factory.mktemp("book") / "site",
        model=str(TINY["qwen3_5"]),
        allow_forced=True,
        device="cpu",
    ) as server:
        yield name, secret.decode(), server
    libc.syscall(KEYCTL, 21, key)  # KEYCTL_INVALIDATE


def test_a_run_neither_reads_the_servers_keyring_nor_leaves_its_folder(secret_server):
    name, secret, server = secret_server
    code = STEAL.replace("NAME", name)
    forced = [
        f"<tool_call>\n<function=run_python>\n<parameter=code>\n{code}</parameter>\n"
        "</function>\n</tool_call><|im_end|>",
        "Done.<|im_end|>",
    ]
    before = set(Path(tempfile.gettempdir()).glob(f"agentloop-run-{os.getpid()}-*"))
    client = Client(server.url)
    run_id = client.start_run(
        "Read the key.",
        {"max_new_tokens": 400, "max_steps": 2, "temperature": 0, "tools": ["run_python"]},
        forced,
    )
    evs = run_through(client, run_id, approve=True)
    [result] = [e for e in evs if e["type"] == "tool_result"]
    assert "read -1 Operation not permitted" in result["output"] and "deep" in result["output"]
    assert secret not in result["output"]
    # The run's folder goes when its worker ends, just after run_end
    deadline = time.monotonic() + 30
    while set(Path(tempfile.gettempdir()).glob(f"agentloop-run-{os.getpid()}-*")) - before:
        assert time.monotonic() < deadline, "the run's folder, 3,000 levels deep, was left behind"
        time.sleep(0.1)
