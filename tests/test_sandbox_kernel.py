"""The sandbox against kernel interfaces no namespace isolates: the keyring, socket families,
io_uring and the other calls the seccomp filter refuses (issue 11, attacks 1 and 4, and more of the
same families).

Secrets and names are made at run time (uuid4) and live on the host, never in the code sent in, so a
traceback that echoes the code cannot pass for a leak; where the host can check (its keyring, a
vsock port), it does.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import textwrap
import uuid

import pytest

from agentloop.sandbox import bubblewrap as sandbox
from agentloop.sandbox import seccomp_filter
from tests.test_sandbox import blocked, sb

if os.uname().machine != "x86_64":
    pytest.fail("these tests call system calls by their x86_64 numbers", pytrace=False)

NR = {
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "io_uring_setup": 425,
    "userfaultfd": 323,
    "perf_event_open": 298,
    "bpf": 321,
    "kexec_load": 246,
    "init_module": 175,
    "personality": 135,
    "clone": 56,
    "unshare": 272,
    "setns": 308,
    "open_by_handle_at": 304,
    "process_vm_readv": 310,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "clock_settime": 227,
    "swapon": 167,
    "syslog": 103,
    "fsopen": 430,
    "clone3": 435,
    "ptrace": 101,
    "mount": 165,
}
KEYCTL_CLEAR, KEYCTL_SEARCH, KEYCTL_READ = 7, 10, 11
SESSION, USER = -3, -4  # KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING

# In the sandbox: call(name, *args), or raw(number, *args), makes a system call; OSError on -1.
CALL = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {NR}
def raw(number, *args):
    got = libc.syscall(number, *args)
    if got == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return got
def call(name, *args):
    return raw(NR[name], *args)
"""


def sbc(code: str, folder) -> sandbox.SandboxResult:
    """sb() with call() and raw() defined."""
    return sb(CALL + textwrap.dedent(code), folder)


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def host_call(name: str, *args) -> int:
    got = _libc.syscall(NR[name], *args)
    if got == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return got


@pytest.fixture
def host_secret():
    """A key in this test's own new session keyring (the sandbox would inherit it, but for keyctl):
    (its name, its secret value), both made now."""
    host_call(
        "keyctl", 1, None
    )  # KEYCTL_JOIN_SESSION_KEYRING, anonymous: this process's keyring only
    name, secret = f"k{uuid.uuid4().hex}", uuid.uuid4().hex.encode()
    key = host_call("add_key", b"user", name.encode(), secret, len(secret), SESSION)
    yield name, secret
    host_call("keyctl", 21, key)  # KEYCTL_INVALIDATE


def read_host_key(name: str) -> bytes:
    key = host_call("keyctl", KEYCTL_SEARCH, SESSION, b"user", name.encode(), 0)
    buf = ctypes.create_string_buffer(256)
    n = host_call("keyctl", KEYCTL_READ, key, buf, 256)
    return buf.raw[:n]


# ---- issue 11, attack 1: the caller's kernel keyring ---------------------------------------------


def test_keyring_secret_of_the_server_cannot_be_read(folder, host_secret):
    name, secret = host_secret
    r = sbc(
        f"""
        def steal():
            key = call('keyctl', {KEYCTL_SEARCH}, {SESSION}, b'user', {name.encode()!r}, 0)
            buf = ctypes.create_string_buffer(256)
            n = call('keyctl', {KEYCTL_READ}, key, buf, 256)
            return buf.raw[:n]
        attempt('read', steal)
        attempt('proc keys', lambda: [l for l in open('/proc/keys') if {name!r} in l] or 1 / 0)
    """,
        folder,
    )
    blocked(r, "read", "Operation not permitted")
    blocked(r, "proc keys")  # the fresh session keyring: the server's key is not even listed
    assert secret.decode() not in r.stdout + r.stderr


def test_keyring_of_the_server_cannot_be_cleared(folder, host_secret):
    name, secret = host_secret
    r = sbc(
        f"""
        attempt('clear', lambda: call('keyctl', {KEYCTL_CLEAR}, {SESSION}))
        attempt('clear user', lambda: call('keyctl', {KEYCTL_CLEAR}, {USER}))
    """,
        folder,
    )
    blocked(r, "clear", "Operation not permitted")
    blocked(r, "clear user", "Operation not permitted")
    assert read_host_key(name) == secret  # still there, on the host


def test_keyring_passes_no_notes_between_runs(folder, tmp_path):
    note = f"n{uuid.uuid4().hex}"
    first = sbc(
        f"""
        attempt('add', lambda: call('add_key', b'user', {note.encode()!r}, b'hello', 5, {USER}))
    """,
        folder,
    )
    blocked(first, "add", "Operation not permitted")
    other = tmp_path / "other"
    other.mkdir()
    second = sbc(
        f"""
        search = ({KEYCTL_SEARCH}, {USER}, b'user', {note.encode()!r}, 0)
        attempt('find', lambda: call('keyctl', *search))
        attempt('request', lambda: call('request_key', b'user', {note.encode()!r}, None, 0))
    """,
        other,
    )
    blocked(second, "find", "Operation not permitted")
    blocked(second, "request", "Operation not permitted")
    with pytest.raises(OSError):  # and the host's user keyring holds no such note either
        host_call("keyctl", KEYCTL_SEARCH, USER, b"user", note.encode(), 0)


def test_the_keyring_is_fresh_even_past_the_filter(host_secret):
    """Defence in depth: what keyring_args() runs (bwrap, in a run) starts in a new, empty session
    keyring."""
    name, _ = host_secret
    assert sandbox.keyring_args(), "keyutils' keyctl is missing: make system installs it"
    show = ["keyctl", "show", "@s"]  # the session keyring's tree
    assert (
        name in subprocess.run(show, capture_output=True, text=True).stdout
    )  # here: the secret is in it
    inside = subprocess.run([*sandbox.keyring_args(), *show], capture_output=True, text=True)
    assert inside.returncode == 0 and name not in inside.stdout and inside.stderr == ""
    said = subprocess.run(
        [*sandbox.keyring_args(), "sh", "-c", "echo said >&2; ls /proc/self/fd"],
        capture_output=True,
        text=True,
    )
    assert said.stderr == "said\n" and said.stdout.split() == [
        "0",
        "1",
        "2",
        "3",
    ]  # 3: ls's own listing


# ---- issue 11, attack 4: socket families no namespace isolates -----------------------------------


def test_vsock_port_of_the_host_is_not_shared(folder):
    port = 10_000 + uuid.uuid4().int % 50_000
    host = socket.socket(
        socket.AF_VSOCK, socket.SOCK_STREAM
    )  # fails loudly if the kernel has no vsock
    host.bind((socket.VMADDR_CID_ANY, port))
    try:
        r = sb(
            f"""
            import socket
            def bind():
                s = socket.socket(40, socket.SOCK_STREAM)
                s.bind((0xFFFFFFFF, {port}))
                return 'bound'
            attempt('vsock', bind)
        """,
            folder,
        )
    finally:
        host.close()
    blocked(
        r, "vsock", "Address family not supported"
    )  # not EADDRINUSE: the family is refused outright


@pytest.mark.parametrize(
    "family, kind, proto",
    [
        (17, socket.SOCK_RAW, 0),  # AF_PACKET: raw frames
        (38, socket.SOCK_SEQPACKET, 0),  # AF_ALG: the kernel's crypto, a frequent exploit target
        (15, socket.SOCK_RAW, 2),  # AF_KEY: IPsec keys
        (30, socket.SOCK_RDM, 0),  # AF_TIPC
        (44, socket.SOCK_RAW, 0),  # AF_XDP
        (5, socket.SOCK_DGRAM, 0),  # AF_APPLETALK
        (31, socket.SOCK_STREAM, 3),  # AF_BLUETOOTH
        (16, socket.SOCK_RAW, 15),  # AF_NETLINK, NETLINK_KOBJECT_UEVENT: the host's device events
        (16, socket.SOCK_RAW, 9),  # AF_NETLINK, NETLINK_AUDIT
        (16, socket.SOCK_RAW, 0),  # NETLINK_ROUTE: unread answers the cgroup does not count
        (2, socket.SOCK_STREAM, 0),  # AF_INET: loopback TCP queues in the host's tcp_mem
        (2, socket.SOCK_DGRAM, 0),  # AF_INET, UDP
        (10, socket.SOCK_STREAM, 0),  # AF_INET6
        (0, socket.SOCK_STREAM, 0),  # AF_UNSPEC
    ],
)
def test_other_socket_families_are_refused(folder, family, kind, proto):
    r = sb(
        f"""
        import socket
        attempt('family', lambda: socket.socket({family}, {kind}, {proto}))
    """,
        folder,
    )
    blocked(r, "family", "Address family not supported")


def test_unix_sockets_still_work_inside(folder):
    """The one family left (ALLOWED_FAMILIES): a pair, and a server on a path a thread connects to."""
    r = sandbox.run(
        """
import socket, threading
a, b = socket.socketpair(); a.send(b'unix'); print(b.recv(4).decode())
srv = socket.socket(socket.AF_UNIX); srv.bind('/tmp/s'); srv.listen()
threading.Thread(target=lambda: srv.accept()[0].send(b'server')).start()
c = socket.socket(socket.AF_UNIX); c.connect('/tmp/s'); print(c.recv(6).decode())
""",
        folder,
    )
    assert r.stdout == "unix\nserver\n", r.stderr


# ---- more of the calls the filter refuses --------------------------------------------------------


@pytest.mark.parametrize(
    "what, code",
    [
        ("io_uring", "call('io_uring_setup', 4, ctypes.create_string_buffer(120))"),
        ("userfaultfd", "call('userfaultfd', 0)"),
        (
            "perf_event_open",
            "call('perf_event_open', ctypes.create_string_buffer(128), 0, -1, -1, 0)",
        ),
        ("bpf", "call('bpf', 0, ctypes.create_string_buffer(64), 64)"),
        ("kexec_load", "call('kexec_load', 0, 0, None, 0)"),
        ("init_module", "call('init_module', None, 0, b'')"),
        ("personality", "call('personality', 0x0040000)"),  # ADDR_NO_RANDOMIZE: turns off ASLR
        ("clone newnet", "call('clone', 0x40000000 | 17, 0, 0, 0, 0)"),  # CLONE_NEWNET | SIGCHLD
        ("clone3", "call('clone3', ctypes.create_string_buffer(88), 88)"),
        ("unshare mount", "call('unshare', 0x20000)"),
        ("setns", "call('setns', os.open('/proc/self/ns/net', os.O_RDONLY), 0)"),
        ("open_by_handle_at", "call('open_by_handle_at', 3, ctypes.create_string_buffer(16), 0)"),
        ("clock_settime", "call('clock_settime', 0, ctypes.create_string_buffer(16))"),
        ("swapon", "call('swapon', b'/data/swap', 0)"),
        (
            "syslog",
            "call('syslog', 3, ctypes.create_string_buffer(64), 64)",
        ),  # read the kernel's log
        ("fsopen", "call('fsopen', b'tmpfs', 0)"),
        ("x32 keyctl", "raw(0x40000000 | 250, 0, -3, 0)"),  # the x32 ABI's number for keyctl
    ],
)
def test_kernel_interfaces_are_refused(folder, what, code):
    r = sbc(
        f"""
        attempt({what!r}, lambda: {code})
    """,
        folder,
    )
    blocked(r, what, "Operation not permitted", "Function not implemented")


def test_another_process_memory_and_fds_are_out_of_reach(folder):
    r = sbc(
        """
        import subprocess, time
        child = subprocess.Popen(['sleep', '5'])
        local = ctypes.create_string_buffer(8)
        iov = (ctypes.c_void_p * 2)(ctypes.addressof(local), 8)
        attempt('vm_readv', lambda: call('process_vm_readv', child.pid, iov, 1, iov, 1, 0))
        attempt('getfd', lambda: call('pidfd_getfd', call('pidfd_open', child.pid, 0), 0, 0))
        attempt('ptrace own child', lambda: call('ptrace', 16, child.pid, 0, 0))
        child.kill()
    """,
        folder,
    )
    for what in ("vm_readv", "getfd", "ptrace own child"):
        blocked(r, what, "Operation not permitted")


def test_typing_into_a_terminal_is_refused(folder):
    r = sb(
        """
        import fcntl, pty, termios
        leader, follower = pty.openpty()
        attempt('TIOCSTI', lambda: fcntl.ioctl(follower, termios.TIOCSTI, b'x'))
    """,
        folder,
    )
    blocked(r, "TIOCSTI", "Operation not permitted")


def test_the_code_runs_under_the_filter(folder):
    r = sandbox.run(
        "s = open('/proc/self/status').read(); print(s.split('Seccomp:')[1].split()[0], "
        "s.split('NoNewPrivs:')[1].split()[0])",
        folder,
    )
    assert (
        r.stdout == "2 1\n"
    )  # mode 2: a filter; no new privileges, so no setuid program can drop it


def test_ordinary_programs_still_work_under_the_filter(folder):
    r = sandbox.run(
        """
import asyncio, multiprocessing, subprocess, threading
with multiprocessing.Pool(2) as pool:
    print(sum(pool.map(abs, [-1, -2, 3])))
print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())
t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()
print(asyncio.run(asyncio.sleep(0, 'async')))
""",
        folder,
        timeout=20,
    )
    assert r.stdout == "6\nchild\nthread\nasync\n", r.stderr


def test_the_filter_is_built_by_libseccomp():
    program, unknown = seccomp_filter.program()
    assert len(program) % 8 == 0 and len(program) > 8 * len(
        seccomp_filter.DENIED
    )  # struct sock_filter: 8 bytes
    assert "keyctl" not in unknown and "io_uring_setup" not in unknown
