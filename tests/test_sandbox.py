"""run_python's sandbox against real escape attempts, with the real bubblewrap.

Each attempt runs inside the sandbox through `attempt()`, which prints "blocked WHAT: Error: message" when the
attempt raises and "ESCAPED WHAT: ..." when it works; the test asserts the first, and where the host can check
(a listener, a marker file, a process), it checks on the host too.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from agentloop import cli
from agentloop.sandbox import Limits, SandboxUnavailable, cgroup
from agentloop.sandbox import bubblewrap as sandbox

T = 3.0  # seconds of wall clock per run: short, so the file stays fast

ATTEMPT = """
import os, sys
def attempt(what, fn):
    try:
        got = fn()
    except BaseException as e:
        print(f"blocked {what}: {type(e).__name__}: {e}")
    else:
        print(f"ESCAPED {what}: {got!r}")
"""


def sb(code: str, folder: Path, timeout: float = T, **limits) -> sandbox.SandboxResult:
    """Run code (with attempt() defined) in the sandbox."""
    return sandbox.run(
        ATTEMPT + textwrap.dedent(code), folder, timeout=timeout, limits=Limits(**limits)
    )


def blocked(r: sandbox.SandboxResult, what: str, *errors: str) -> str:
    """Assert the attempt `what` was blocked (with one of `errors`, if given) and nothing escaped."""
    assert "ESCAPED" not in r.stdout, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith(f"blocked {what}:")]
    assert lines, f"no verdict for {what!r}:\n{r.stdout}\n{r.stderr}"
    if errors:
        assert any(e in lines[0] for e in errors), lines[0]
    return lines[0]


@pytest.fixture
def sibling(tmp_path: Path) -> Path:
    """Another conversation's folder, next to this one, with a secret in it."""
    f = tmp_path / "other-conversation"
    f.mkdir()
    (f / "secret.txt").write_text("the other conversation's secret")
    return f


# ---- a normal program works -------------------------------------------------------------------------------


def test_normal_program_prints_writes_and_reads(folder):
    r = sandbox.run(
        "print('hello'); open('out.txt', 'w').write('42'); print(open('/data/out.txt').read())",
        folder,
    )
    assert (r.stdout, r.stderr, r.exit_code, r.timed_out, r.truncated, r.reason) == (
        "hello\n42\n",
        "",
        0,
        False,
        False,
        None,
    )
    assert (folder / "out.txt").read_text() == "42"
    assert 0 < r.ms < 5000


def test_reads_a_file_the_host_put_in_the_folder(folder):
    (folder / "input.csv").write_text("a,b\n1,2\n")
    r = sandbox.run("import csv; print(list(csv.reader(open('input.csv'))))", folder)
    assert r.stdout == "[['a', 'b'], ['1', '2']]\n"


def test_error_gives_traceback_and_exit_code(folder):
    r = sandbox.run("x = 1\nraise ValueError('bad value')", folder)
    assert r.exit_code == 1 and r.reason is None
    assert 'File "/tmp/main.py", line 2' in r.stderr and "ValueError: bad value" in r.stderr


def test_stdin_is_empty(folder):
    r = sb("attempt('stdin', input)", folder)
    blocked(r, "stdin", "EOFError")


def test_code_can_import_its_own_module_from_data(folder):
    (folder / "helper.py").write_text("def double(x):\n    return 2 * x\n")
    assert sandbox.run("import helper; print(helper.double(21))", folder).stdout == "42\n"


def test_crash_is_reported_and_leaves_no_core_file(folder):
    r = sandbox.run("import ctypes; ctypes.string_at(0)", folder)
    assert r.exit_code == 128 + signal.SIGSEGV and r.reason == "killed by SIGSEGV"
    assert os.listdir(folder) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only")
def test_as_root_the_code_is_nobody_and_the_folder_is_given_back(folder):
    r = sandbox.run("open('made', 'w')", folder)
    assert r.exit_code == 0
    assert (
        folder / "made"
    ).stat().st_uid == 65534  # nobody on the host, not root: RLIMIT_NPROC applies
    assert folder.stat().st_uid == 0  # the folder was lent to nobody for the run only


def test_unicode_output(folder):
    r = sandbox.run("print('héllo → 世界')", folder)
    assert r.stdout == "héllo → 世界\n"


# ---- network ------------------------------------------------------------------------------------------------


def test_tcp_to_a_host_listener_fails(folder):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        r = sb(
            f"import socket; attempt('tcp', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2))",
            folder,
        )
        blocked(r, "tcp", "Address family not supported")  # no IP socket at all (seccomp_filter)
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()


def test_udp_to_a_host_socket_never_arrives(folder):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as host:
        host.bind(("127.0.0.1", 0))
        port = host.getsockname()[1]
        r = sb(
            f"""
            import socket, time
            def send():
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.settimeout(0.3)
                for _ in range(5):
                    s.sendto(b'leak', ('127.0.0.1', {port})); time.sleep(0.01)
                s.recv(10)  # nothing answers on the sandbox's own loopback
            attempt('udp', send)
        """,
            folder,
        )
        blocked(r, "udp", "Address family not supported")
        host.settimeout(0.3)
        with pytest.raises(TimeoutError):
            host.recv(10)


def test_dns_fails(folder):
    r = sb("import socket; attempt('dns', lambda: socket.getaddrinfo('pypi.org', 443))", folder)
    blocked(r, "dns", "gaierror")


def test_internet_is_unreachable(folder):
    r = sb(
        "import socket; attempt('internet', lambda: socket.create_connection(('1.1.1.1', 53), timeout=2))",
        folder,
    )
    blocked(r, "internet", "Address family not supported")


def test_only_a_loopback_interface(folder):
    r = sandbox.run("print(open('/proc/net/dev').read().splitlines()[2:])", folder)
    assert r.stdout.strip().startswith("['    lo:") and r.stdout.count(":") == 1, r.stdout


def test_host_unix_socket_is_unreachable(folder, tmp_path):
    path = tmp_path / "host.sock"  # outside /data
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        r = sb(
            f"import socket; attempt('unix', lambda: socket.socket(socket.AF_UNIX).connect({str(path)!r}))",
            folder,
        )
        blocked(r, "unix", "FileNotFoundError")
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()


def test_host_abstract_unix_socket_is_unreachable(folder):
    name = f"\0agentloop-test-{uuid.uuid4().hex}"  # abstract sockets belong to a network namespace
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(name)
        server.listen()
        r = sb(
            f"import socket; attempt('abstract', lambda: socket.socket(socket.AF_UNIX).connect({name!r}))",
            folder,
        )
        blocked(r, "abstract", "ConnectionRefusedError")
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()


# ---- writing outside /data ----------------------------------------------------------------------------------


def test_cannot_write_usr(folder):
    name = f"/usr/agentloop-{uuid.uuid4().hex}"
    r = sb(f"attempt('usr', lambda: open({name!r}, 'w'))", folder)
    blocked(r, "usr", "Read-only file system", "PermissionError")
    assert not os.path.exists(name)


def test_cannot_write_etc(folder):
    r = sb("attempt('etc', lambda: os.makedirs('/etc/cron.d'))", folder)
    blocked(r, "etc", "Read-only file system")


def test_cannot_write_the_root(folder):
    name = f"/agentloop-{uuid.uuid4().hex}"
    r = sb(f"attempt('root', lambda: open({name!r}, 'w'))", folder)
    blocked(r, "root", "Read-only file system")
    assert not os.path.exists(name)


def test_tmp_is_private(folder):
    name = f"/tmp/agentloop-marker-{uuid.uuid4().hex}"
    r = sb(f"open({name!r}, 'w').write('x'); print(os.path.exists({name!r}))", folder)
    assert r.stdout == "True\n"  # the code can use /tmp...
    assert not os.path.exists(name)  # ...but it is not the host's /tmp
    r = sb(f"attempt('tmp', lambda: open({name!r}))", folder)
    blocked(r, "tmp", "FileNotFoundError")  # nor does it outlive the run


def test_host_tmp_is_invisible(folder):
    marker = Path(f"/tmp/agentloop-host-{uuid.uuid4().hex}")
    marker.write_text("host")
    try:
        r = sb(f"attempt('host tmp', lambda: open({str(marker)!r}).read())", folder)
        blocked(r, "host tmp", "FileNotFoundError")
    finally:
        marker.unlink()


def test_tmp_size_is_bounded(folder):
    r = sb(
        "attempt('fill tmp', lambda: open('/tmp/big', 'wb').write(b'x' * (16 << 20)))",
        folder,
        tmp_bytes=4 << 20,
    )
    blocked(r, "fill tmp", "No space left on device")


# ---- reading outside /data ----------------------------------------------------------------------------------


def test_home_is_invisible(folder):
    r = sb(
        """
        attempt('home', lambda: os.listdir('/root'))
        attempt('homes', lambda: os.listdir('/home'))
        attempt('bashrc', lambda: open('/root/.bashrc').read())
    """,
        folder,
    )
    for what in ("home", "homes", "bashrc"):
        blocked(r, what, "FileNotFoundError")


def test_repository_is_invisible(folder):
    here = str(Path(__file__).resolve())
    r = sb(
        f"""
        attempt('repo', lambda: os.listdir('/work/main'))
        attempt('this file', lambda: open({here!r}).read())
        attempt('sandbox.py', lambda: open({sandbox.__file__!r}).read())
    """,
        folder,
    )
    for what in ("repo", "this file", "sandbox.py"):
        blocked(r, what, "FileNotFoundError")


def test_etc_shadow_and_passwd_are_invisible(folder):
    r = sb(
        "attempt('shadow', lambda: open('/etc/shadow').read()); attempt('passwd', lambda: open('/etc/passwd').read())",
        folder,
    )
    blocked(r, "shadow", "FileNotFoundError")
    blocked(r, "passwd", "FileNotFoundError")


def test_other_conversation_is_invisible(folder, sibling):
    r = sb(
        f"""
        attempt('sibling', lambda: open({str(sibling / "secret.txt")!r}).read())
        attempt('dotdot', lambda: open('/data/../other-conversation/secret.txt').read())
        print(os.listdir('/data'))
    """,
        folder,
    )
    blocked(r, "sibling", "FileNotFoundError")
    blocked(r, "dotdot", "FileNotFoundError")
    assert "[]" in r.stdout


def test_symlink_made_inside_does_not_reach_the_host(folder, sibling):
    r = sb(
        f"""
        os.symlink('/etc/shadow', '/data/shadow')
        os.symlink({str(sibling / "secret.txt")!r}, '/data/secret')
        attempt('shadow link', lambda: open('/data/shadow').read())
        attempt('sibling link', lambda: open('/data/secret').read())
    """,
        folder,
    )
    blocked(r, "shadow link", "FileNotFoundError")
    blocked(r, "sibling link", "FileNotFoundError")
    assert (
        folder / "shadow"
    ).is_symlink()  # the link is there, harmless inside (tools.read_file refuses it)


def test_symlink_placed_by_the_host_does_not_escape(folder, sibling):
    (folder / "absolute").symlink_to(sibling / "secret.txt")
    (folder / "relative").symlink_to(Path("..") / sibling.name / "secret.txt")
    r = sb(
        "attempt('absolute', lambda: open('/data/absolute').read()); "
        "attempt('relative', lambda: open('/data/relative').read())",
        folder,
    )
    blocked(r, "absolute", "FileNotFoundError")
    blocked(r, "relative", "FileNotFoundError")


def test_hard_links_out_of_data_fail(folder):
    r = sb(
        """
        attempt('link usr', lambda: os.link('/usr/bin/python3', '/data/python3'))
        attempt('link proc', lambda: os.link('/proc/1/environ', '/data/environ'))
    """,
        folder,
    )
    blocked(r, "link usr", "Invalid cross-device link", "PermissionError")
    blocked(r, "link proc", "Invalid cross-device link", "PermissionError")
    assert os.listdir(folder) == []


def test_sys_is_invisible(folder):
    r = sb(
        "attempt('sys', lambda: os.listdir('/sys/class/net')); attempt('cgroup', lambda: os.listdir('/sys/fs/cgroup'))",
        folder,
    )
    blocked(r, "sys", "FileNotFoundError")
    blocked(r, "cgroup", "FileNotFoundError")


def test_proc_self_root_is_the_sandbox(folder):
    r = sb(
        """
        print(sorted(os.listdir('/proc/self/root')) == sorted(os.listdir('/')))
        attempt('proc root', lambda: open('/proc/1/root/etc/shadow').read())
        attempt('proc cwd', lambda: os.listdir('/proc/1/root/work'))
    """,
        folder,
    )
    assert r.stdout.startswith("True\n")
    blocked(r, "proc root", "FileNotFoundError")
    blocked(r, "proc cwd", "FileNotFoundError")


def test_chroot_fails(folder):
    r = sb("attempt('chroot', lambda: os.chroot('/tmp'))", folder)
    blocked(r, "chroot", "PermissionError")


# ---- processes ----------------------------------------------------------------------------------------------


def test_proc_shows_only_the_sandbox(folder):
    r = sb(
        f"""
        pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        print(pids)
        print(open('/proc/1/cmdline').read().split(chr(0))[0])
        attempt('host pid', lambda: open('/proc/{os.getpid()}/cmdline').read())
    """,
        folder,
    )
    pids = eval(r.stdout.splitlines()[0])
    assert os.getpid() not in pids and len(pids) <= 3  # bwrap's init, the code, maybe nothing else
    assert r.stdout.splitlines()[1].endswith("bwrap")  # PID 1 is the sandbox's own init
    blocked(r, "host pid", "FileNotFoundError")


def test_environment_does_not_leak(folder, monkeypatch):
    secret = f"s3cret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AGENTLOOP_SECRET", secret)
    r = sb(
        f"""
        print(sorted(os.environ))
        found = [p for p in os.listdir('/proc') if p.isdigit()
                 and {secret!r}.encode() in open(f'/proc/{{p}}/environ', 'rb').read()]
        print('found in', found)
        attempt('host environ', lambda: open('/proc/{os.getpid()}/environ').read())
    """,
        folder,
    )
    assert secret not in r.stdout + r.stderr
    assert (
        r.stdout.splitlines()[0]
        == "['HOME', 'LANG', 'PATH', 'PWD', 'PYTHONPATH', 'TMPDIR', 'USER']"
    )
    assert "found in []" in r.stdout  # nor in /proc/<ppid>/environ (bwrap's init) or anywhere else
    blocked(r, "host environ", "FileNotFoundError")


def test_cannot_kill_a_host_process(folder):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        r = sb(
            f"import signal; attempt('kill', lambda: os.kill({sleeper.pid}, signal.SIGKILL))",
            folder,
        )
        blocked(r, "kill", "ProcessLookupError")
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kill_everything_spares_the_host(folder):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        r = sb("import signal; attempt('kill all', lambda: os.kill(-1, signal.SIGKILL))", folder)
        blocked(
            r, "kill all", "ProcessLookupError"
        )  # -1: all it may signal, bar PID 1 and itself: nobody
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_ptrace_of_a_host_process_fails(folder):
    r = sb(
        f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def ptrace():
            if libc.ptrace(16, {os.getpid()}, 0, 0) != 0:  # PTRACE_ATTACH
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        attempt('ptrace', ptrace)
    """,
        folder,
    )
    blocked(
        r, "ptrace", "Operation not permitted"
    )  # the seccomp filter refuses ptrace before any lookup


def test_setuid_root_fails(folder):
    r = sb(
        """
        attempt('setuid', lambda: os.setuid(0))
        attempt('setgid', lambda: os.setgid(0))
        print('uid', os.getuid(), os.geteuid())
    """,
        folder,
    )
    blocked(
        r, "setuid", "Invalid argument", "PermissionError"
    )  # EINVAL: uid 0 does not exist in the sandbox
    blocked(r, "setgid", "Invalid argument", "PermissionError")
    assert "uid 65534 65534" in r.stdout


def test_setuid_binaries_give_no_root(folder):
    r = sb(
        """
        import subprocess
        def run(*cmd):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=2)
            if p.returncode != 0:
                raise RuntimeError(f'exit {p.returncode}: {(p.stdout + p.stderr).strip()}')
            return p.stdout
        attempt('su', lambda: run('su', '-c', 'id'))
        attempt('mount', lambda: run('mount', '-t', 'tmpfs', 'none', '/tmp'))
        attempt('unshare', lambda: run('unshare', '-r', 'id'))
    """,
        folder,
    )
    for what in ("su", "mount", "unshare"):
        line = blocked(r, what, "RuntimeError")
        assert "uid=0" not in line


def test_mount_syscall_fails(folder):
    r = sb(
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def mount():
            if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) != 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        attempt('mount', mount)
    """,
        folder,
    )
    blocked(r, "mount", "Operation not permitted")


def test_new_user_namespace_fails(folder):
    r = sb(
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def unshare():
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER: would be root in a nested namespace
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        attempt('userns', unshare)
    """,
        folder,
    )
    blocked(r, "userns", "OSError", "PermissionError")  # the filter refuses unshare: EPERM


def test_no_disks_in_dev(folder):
    r = sb(
        """
        import stat
        print(sorted(os.listdir('/dev')))
        attempt('open sda', lambda: open('/dev/sda', 'wb'))
        attempt('mknod', lambda: os.mknod('/dev/sdz', stat.S_IFBLK | 0o600, os.makedev(8, 0)))
        attempt('mknod data', lambda: os.mknod('/data/sdz', stat.S_IFBLK | 0o600, os.makedev(8, 0)))
    """,
        folder,
    )
    devices = eval(r.stdout.splitlines()[0])
    assert set(devices) <= {
        "console",
        "core",
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }
    blocked(r, "open sda", "FileNotFoundError", "Read-only file system")
    blocked(r, "mknod", "Read-only file system", "PermissionError")
    blocked(r, "mknod data", "PermissionError")


def test_hostname_is_the_sandboxs_own(folder):
    r = sb(
        "import socket; print(socket.gethostname()); attempt('sethostname', lambda: socket.sethostname('pwned'))",
        folder,
    )
    assert r.stdout.startswith("sandbox\n")
    blocked(r, "sethostname", "PermissionError")
    assert socket.gethostname() != "pwned"


# ---- resources ----------------------------------------------------------------------------------------------


def test_memory_bomb_fails(folder):
    r = sandbox.run("b = bytearray(4 << 30)", folder, timeout=T)
    assert r.exit_code == 1 and "MemoryError" in r.stderr
    assert r.reason == "memory limit reached"


def test_cpu_spin_is_killed_by_the_cpu_limit(folder):
    r = sandbox.run("while True: pass", folder, timeout=5, limits=Limits(cpu_seconds=1))
    assert r.exit_code == 128 + signal.SIGXCPU and not r.timed_out
    assert r.reason == "CPU time limit reached"
    assert r.ms < 4000


def test_sleep_past_the_timeout_is_killed(folder):
    t0 = time.monotonic()
    r = sandbox.run("import time; print('started'); time.sleep(60)", folder, timeout=1.5)
    assert (
        r.timed_out
        and r.exit_code is None
        and r.reason == "killed after the 1.5 s wall-clock limit"
    )
    assert r.stdout == "started\n"  # what was printed before the kill survives it
    assert time.monotonic() - t0 < 1.5 + 1.5


DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # double fork: the grandchild is re-parented, a daemon
        os.close(1); os.close(2)  # it does not even hold our pipes
        while True:
            with open('/data/beat', 'a') as f:
                f.write('.')
            time.sleep(0.1)
    os._exit(0)
time.sleep(0.5)
print('parent done')
"""


def _stops_growing(path: Path) -> None:
    assert path.exists() and path.stat().st_size > 0  # the daemon did run
    size = path.stat().st_size
    time.sleep(1.0)
    assert path.stat().st_size == size  # and it is gone


def test_daemon_dies_when_the_code_ends(folder):
    r = sandbox.run(DAEMON, folder, timeout=T)
    assert r.stdout == "parent done\n" and r.exit_code == 0
    _stops_growing(folder / "beat")


def test_daemon_dies_at_the_timeout(folder):
    r = sandbox.run(DAEMON + "time.sleep(60)", folder, timeout=1.0)
    assert r.timed_out
    _stops_growing(folder / "beat")


def test_process_count_is_bounded(folder):
    r = sb(
        """
        import time
        n = 0
        def spawn():
            global n
            while n < 1000:
                if os.fork() == 0:
                    time.sleep(5)
                    os._exit(0)
                n += 1
        attempt('fork', spawn)
        print('forked', n)
    """,
        folder,
        processes=8,
    )
    blocked(r, "fork", "Resource temporarily unavailable")
    assert "forked 6" in r.stdout  # bwrap's init and the code are the other two of 8


def test_fork_bomb_ends_and_the_sandbox_still_works(folder):
    t0 = time.monotonic()
    r = sandbox.run(
        "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", folder, timeout=1.5
    )
    assert r.timed_out and time.monotonic() - t0 < 1.5 + 2
    r = sandbox.run("print('fine')", folder)
    assert r.stdout == "fine\n"


def test_huge_stdout_is_capped(folder):
    r = sandbox.run("print('x' * 10_000_000)", folder, timeout=T)
    marker = "\n[… output cut at 65536 bytes …]"
    assert r.truncated and r.stdout.endswith(marker)
    assert len(r.stdout) == 65536 + len(marker)
    assert r.exit_code == 0


def test_huge_stderr_is_capped(folder):
    r = sandbox.run(
        "import sys; sys.stderr.write('e' * 1_000_000)",
        folder,
        timeout=T,
        limits=Limits(output_bytes=1000),
    )
    assert r.truncated and r.stderr == "e" * 1000 + "\n[… output cut at 1000 bytes …]"
    assert r.stdout == ""


def test_endless_output_is_capped_until_the_timeout(folder):
    r = sandbox.run("while True: print('y' * 1000)", folder, timeout=1.0)
    assert r.timed_out and r.truncated and len(r.stdout) < 70_000


def test_huge_file_is_stopped(folder):
    r = sandbox.run(
        "open('/data/big', 'wb').write(b'x' * (8 << 20))",
        folder,
        timeout=T,
        limits=Limits(file_bytes=1 << 20),
    )
    assert r.exit_code == 1 and "File too large" in r.stderr
    assert r.reason == "file size limit reached"
    assert (folder / "big").stat().st_size <= 1 << 20


def test_open_files_are_bounded(folder):
    r = sb(
        "fs = []\nattempt('files', lambda: [fs.append(open('/dev/null')) for _ in range(10_000)])",
        folder,
        open_files=64,
    )
    blocked(r, "files", "Too many open files")


# ---- the interface ------------------------------------------------------------------------------------------


def test_missing_bwrap_raises_and_runs_nothing(folder, monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(SandboxUnavailable, match="sudo apt-get install bubblewrap"):
        sandbox.run("open('/data/ran', 'w')", folder)
    assert not (folder / "ran").exists()


def test_sandbox_that_cannot_start_raises_and_runs_nothing(folder, monkeypatch):
    monkeypatch.setattr(
        sandbox, "started", threading.Event()
    )  # check() tries a first sandbox again
    monkeypatch.setattr(sandbox, "prlimit_args", lambda limits: ["/nonexistent/prlimit"])
    with pytest.raises(
        SandboxUnavailable, match="could not start the sandbox.*nonexistent/prlimit"
    ):
        sandbox.run("open('/data/ran', 'w')", folder)
    assert not (folder / "ran").exists()


def test_missing_folder_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        sandbox.run("print(1)", tmp_path / "nope")


def test_the_sandbox_command(folder, capsys):
    args = argparse.Namespace(
        check=False,
        folder=str(folder),
        timeout=None,
        code="print('from the cli'); raise SystemExit(3)",
    )
    assert cli._sandbox(args) == 0
    out = capsys.readouterr().out
    assert "from the cli" in out and "exit code 3" in out


def test_the_sandbox_command_without_bwrap(folder, capsys, monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None)
    args = argparse.Namespace(check=False, folder=str(folder), timeout=2.0, code="print(1)")
    assert cli._sandbox(args) == 2
    assert "sudo apt-get install bubblewrap" in capsys.readouterr().err


def test_check_prints_one_table_of_what_holds():
    out = subprocess.run(
        [sys.executable, "-m", "agentloop", "sandbox", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    header, *lines = out.stdout.splitlines()
    assert header.split() == ["PROTECTION", "HOLDS", "DETAIL"]
    rows = {
        name: (holds, detail)
        for name, holds, detail in (re.split(r"\s{2,}", line, maxsplit=2) for line in lines)
    }
    assert set(rows) == {
        "bubblewrap",
        "namespaces",
        "runs as",
        "seccomp filter",
        "session keyring",
        "cgroup",
        "per-process limits",
        "/tmp and /dev/shm",
        "/data quota",
        "/proc",
    }
    assert (
        rows["seccomp filter"][0] == "yes"
        and "keyctl: Operation not permitted" in rows["seccomp filter"][1]
    )
    assert "AF_VSOCK: Address family not supported" in rows["seccomp filter"][1]
    assert "AF_INET: Address family not supported" in rows["seccomp filter"][1]
    root = os.geteuid() == 0  # as root the folder is a tmpfs: the kernel refuses a write past it
    assert rows["/data quota"][0] == ("yes" if root else "no")
    assert ("fails in the call (ENOSPC)" if root else "checked after") in rows["/data quota"][1]
    assert rows["namespaces"] == ("yes", "user, pid, network (lo), ipc, uts, cgroup, mount")
    assert rows["cgroup"][0] == ("no" if cgroup.kind() == cgroup.NONE else "yes")
