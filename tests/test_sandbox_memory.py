"""The sandbox's memory as a whole, and the quota on /data (issue 11, attack 2; issue 40, attacks 3
and 4; and more of the same families).

RLIMIT_AS bounds each process's address space; memory held outside it (a memfd's pages, files in
/tmp, pipe buffers) and memory spread over many processes is the cgroup's to bound. Each attempt
prints how much it holds after each step, so the host can check the last figure the code reached
against the limit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop import tools
from agentloop.sandbox import FolderFull, Limits, cgroup, cleanup, data_folder
from agentloop.sandbox import bubblewrap as sandbox

MIB = 1 << 20
WHOLE = 160 * MIB  # the sandbox's limit in these tests: well under what each attempt tries to hold


def held(r: sandbox.SandboxResult) -> int:
    """The last 'held N' figure the code printed, in bytes."""
    figures = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("held ")]
    assert figures, r.stdout + r.stderr
    return figures[-1]


def run_whole(code: str, folder: Path, whole: int = WHOLE, **limits) -> sandbox.SandboxResult:
    r = sandbox.run(code, folder, timeout=20, limits=Limits(sandbox_memory_bytes=whole, **limits))
    assert r.cgroup != cgroup.NONE, (
        f"no cgroup on this machine ({r.cgroup}): these tests need one (as root)"
    )
    return r


# ---- issue 11, attack 2: memory no per-process limit counts --------------------------------------


def test_memfd_pages_count_against_the_whole_sandbox(folder):
    r = run_whole(
        """
import os
fds, total = [], 0
for i in range(16):  # 16 x 64 MiB, from one process whose address space stays small
    fd = os.memfd_create('x')
    for _ in range(64):
        os.write(fd, bytes(1 << 20)); total += 1 << 20
    fds.append(fd)
    print('held', total, flush=True)
""",
        folder,
    )
    assert held(r) < WHOLE and r.exit_code == 137, (r.stdout, r.stderr)
    assert r.reason == "memory limit of the whole sandbox reached"


def test_memfd_spread_over_processes_counts_too(folder):
    r = run_whole(
        """
import os, time
children = []
for n in range(12):  # 12 processes, each under RLIMIT_AS, each holding 32 MiB in a memfd
    pid = os.fork()
    if pid == 0:
        fd = os.memfd_create('x')
        for _ in range(32):
            os.write(fd, bytes(1 << 20))
        time.sleep(30)
        os._exit(0)
    children.append(pid)
    time.sleep(0.3)
    print('held', (n + 1) * (32 << 20), flush=True)
""",
        folder,
    )
    assert r.reason == "memory limit of the whole sandbox reached", (r.stdout, r.stderr)
    assert (
        held(r) <= WHOLE + 32 * MIB
    )  # a figure is printed before the child that crosses the limit is killed


def test_files_in_tmp_and_dev_shm_count_too(folder):
    r = run_whole(
        """
total = 0
for where in ('/tmp', '/dev/shm'):
    try:
        for i in range(200):
            open(f'{where}/f{i}', 'wb').write(bytes(1 << 20)); total += 1 << 20
            print('held', total, flush=True)
    except OSError as e:
        print('stopped', e)
""",
        folder,
        tmp_bytes=512 * MIB,
    )  # the tmpfs would take 512 MiB: the cgroup stops it first
    assert held(r) < WHOLE and r.reason == "memory limit of the whole sandbox reached", (
        r.stdout,
        r.stderr,
    )


def test_pipe_buffers_count_too(folder):
    r = run_whole(
        """
import fcntl, os
pipes, total = [], 0
try:
    for i in range(120):  # pipe buffers are kernel memory, outside every address space
        rd, wr = os.pipe()
        fcntl.fcntl(wr, 1031, 1 << 20)  # F_SETPIPE_SZ
        os.set_blocking(wr, False)
        while True:
            try:
                total += os.write(wr, bytes(65536))
            except BlockingIOError:
                break
        pipes.append((rd, wr))
        print('held', total, flush=True)
except OSError as e:
    print('stopped', e)
""",
        folder,
        whole=40 * MIB,
    )  # under the kernel's own 64 MiB of pipe buffers a user may hold
    assert held(r) < 40 * MIB and r.reason == "memory limit of the whole sandbox reached", (
        r.stdout,
        r.stderr,
    )


@pytest.mark.skipif(
    os.geteuid() != 0, reason="as root only: bwrap's own tmpfs takes no inode limit"
)
def test_empty_folders_in_tmp_are_bounded_in_number(folder):
    r = sandbox.run(
        """
import os
n = 0
try:
    while True:
        os.mkdir(f'/tmp/d{n}'); n += 1
except OSError as e:
    print(n, e.strerror)
""",
        folder,
    )
    made, why = r.stdout.split(" ", 1)
    assert (
        int(made) < sandbox.DEFAULT_LIMITS.tmp_inodes and why.strip() == "No space left on device"
    )


def test_the_cgroup_is_removed_after_the_run(folder):
    r = run_whole("import os; os.fork(); print('held 0')", folder)
    assert r.exit_code == 0
    mine = [p for p in Path(cgroup.ROOT).glob(f"*/{cgroup.PARENT}/run-{os.getpid()}-*")]
    assert mine == []


def test_the_result_says_what_bounds_the_memory(folder):
    r = sandbox.run("pass", folder)
    assert r.cgroup == cgroup.kind() and r.cgroup in (
        "cgroup v1",
        "cgroup v2",
        "systemd-run --user --scope",
    )


# ---- socket buffers no cgroup v1 limit counts (issue 40, attack 4) --------------------------------

TWELVE = """
import os, socket, struct, time
def held():
    ...
kids = []
for k in range(12):  # twelve processes, each filling 120 sockets it never reads from
    if (pid := os.fork()) == 0:
        keep, why = [], ''
        try:
            for i in range(120):
                FILL
        except OSError as e:
            why = f'refused {e.strerror}\\n'
        os.write(1, f'{why}queued {held()}\\n'.encode())  # one write: the lines never mix
        time.sleep(1); os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
"""


def queued(r: sandbox.SandboxResult) -> int:
    figures = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("queued ")]
    assert len(figures) == 12, r.stdout + r.stderr
    return sum(figures)


def test_loopback_tcp_cannot_queue_memory_the_cgroup_does_not_count(folder):
    """On main, 2.3 GiB queued here while the run's cgroup counted some 45 MiB: TCP's buffers are
    the host's (tcp_mem). IP sockets are refused now, so nothing is queued at all."""
    fill = (
        "srv = socket.create_server(('127.0.0.1', 0)); a = socket.create_connection(srv.getsockname())\n"
        "                keep += [srv, a, srv.accept()[0]]; a.setblocking(False)\n"
        "                try:\n"
        "                    while True: sent.append(a.send(bytes(65536)))\n"
        "                except BlockingIOError: pass"
    )
    code = TWELVE.replace("FILL", fill).replace("    ...", "    return sum(sent)\nsent = []")
    r = run_whole(code, folder)
    assert queued(r) < WHOLE, r.stdout
    assert "refused Address family not supported by protocol" in r.stdout


def test_netlink_answers_cannot_queue_memory_the_cgroup_does_not_count(folder):
    """Dump requests whose answers are never read: each socket's answers wait in its receive
    buffer, uncounted. The code sums what its netlink sockets hold from its own network namespace's
    /proc/net/netlink (one figure for all twelve, so each reports a twelfth)."""
    fill = (
        "s = socket.socket(16, socket.SOCK_RAW, 0); keep.append(s)\n"
        "                for n in range(2000):  # RTM_GETLINK, a dump of every interface\n"
        "                    s.send(struct.pack('=LHHLL', 32, 18, 0x301, n, 0) + bytes(16))"
    )
    rows = "open('/proc/net/netlink').read().splitlines()[1:]"
    code = TWELVE.replace("FILL", fill).replace(
        "    ...", f"    return sum(int(row.split()[4]) for row in {rows}) // 12"
    )
    r = run_whole(code, folder)
    assert queued(r) < WHOLE, r.stdout
    assert "refused Address family not supported by protocol" in r.stdout


# ---- the quota on /data: the kernel's, during the call (issue 40, attack 3) ----------------------


@pytest.fixture
def small_folder(tmp_path):
    """A conversation's folder as the server makes one, with a quota small enough to fill."""
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs): see --check"
    folder = data_folder.create(32 * MIB, 500, parent=tmp_path)
    assert data_folder.kernel_quota(folder) == (32 * MIB, 500)
    yield folder
    cleanup.remove_tree(folder)


def test_fallocate_past_the_quota_fails_inside_the_call(small_folder):
    """On main, posix_fallocate reserved 2 GiB of the host's disk in 13 ms, in files each under the
    file size limit: the quota was checked only after the run."""
    free = os.statvfs("/").f_bavail * os.statvfs("/").f_frsize
    r = sandbox.run(
        "import os\n"
        "total = 0\n"
        "try:\n"
        "    for i in range(40):  # 40 x 48 MiB, each file under RLIMIT_FSIZE\n"
        "        fd = os.open(f'big{i}', os.O_CREAT | os.O_WRONLY)\n"
        "        os.posix_fallocate(fd, 0, 48 << 20); total += 48 << 20\n"
        "except OSError as e:\n"
        "    print('refused', e.strerror)\n"
        "print('held', sum(os.stat(n).st_blocks * 512 for n in os.listdir('.')))",
        small_folder,
    )
    assert r.stdout.startswith("refused No space left on device"), r.stdout + r.stderr
    assert held(r) <= 32 * MIB
    after = os.statvfs("/").f_bavail * os.statvfs("/").f_frsize
    assert free - after < 16 * MIB  # the host's disk was never used: the folder is in memory


def test_writing_stops_at_the_quota_inside_the_call(small_folder):
    r = sandbox.run(
        "total = 0\n"
        "try:\n"
        "    with open('big', 'wb') as f:\n"
        "        while True:\n"
        "            f.write(bytes(1 << 20)); f.flush(); total += 1 << 20\n"
        "except OSError as e:\n"
        "    print(total, e.strerror)",
        small_folder,
    )
    written, why = r.stdout.split(" ", 1)
    assert int(written) <= 32 * MIB and why.strip() == "No space left on device", r.stdout
    assert r.reason is None  # no check after the run: the code itself was told, in the call


def test_empty_files_stop_at_the_inode_quota(small_folder):
    """On main, 334,596 empty files in 8 s against a 10,000-entry quota checked after the run."""
    r = sandbox.run(
        "import os\n"
        "n = 0\n"
        "try:\n"
        "    while n < 100_000:\n"
        "        os.close(os.open(f'f{n}', os.O_CREAT)); n += 1\n"
        "except OSError as e:\n"
        "    print(n, e.strerror)",
        small_folder,
    )
    made, why = r.stdout.split(" ", 1)
    assert int(made) < 500 and why.strip() == "No space left on device", r.stdout
    assert len(os.listdir(small_folder)) == int(made)


def test_the_folder_stays_usable_when_full(small_folder):
    """Full is not broken: the code can still read, and remove files to make room."""
    sandbox.run("open('big', 'wb').write(bytes(40 << 20))", small_folder)
    r = sandbox.run(
        "import os; print(os.path.getsize('big') <= 32 << 20); os.remove('big'); "
        "open('small', 'w').write('ok'); print(open('small').read())",
        small_folder,
    )
    assert r.stdout == "True\nok\n", r.stdout + r.stderr


def test_the_quota_holds_for_every_folder_the_server_makes():
    """Conversations, runs without one, and the CLI's folder: all made by data_folder.create."""
    from demo_server.conversations import Conversations

    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    conversations = Conversations(keep=2)
    try:
        conv = conversations.new()
        assert data_folder.kernel_quota(conv.files) == (
            data_folder.DATA_BYTES,
            data_folder.DATA_ENTRIES,
        )
    finally:
        conversations.close()
    assert not conv.files.exists() and not data_folder.is_our_mount(conv.files)


# ---- a folder without the kernel's quota (the reader's own, or not root): checked after ------------


def test_writing_past_the_quota_refuses_the_next_run(plain_folder):
    folder = plain_folder
    limits = Limits(data_bytes=48 * MIB)
    r = sandbox.run(
        "for i in range(4): open(f'big{i}', 'wb').write(bytes(16 << 20))", folder, limits=limits
    )
    assert (
        r.exit_code == 0
        and "past its quota of 48 MiB" in r.reason
        and "next run will be refused" in r.reason
    )
    with pytest.raises(FolderFull, match="was not run"):
        sandbox.run("open('more', 'w').write('x')", folder, limits=limits)
    assert not (folder / "more").exists()
    for big in folder.glob("big*"):  # the reader removes files: the folder is usable again
        big.unlink()
    assert sandbox.run("print('again')", folder, limits=limits).stdout == "again\n"


def test_many_small_files_count_against_the_quota(plain_folder):
    limits = Limits(data_entries=500)
    r = sandbox.run(
        "import os\nfor i in range(800): os.mkdir(f'd{i}')", plain_folder, limits=limits
    )
    assert "800" not in r.stdout and "past its quota" in r.reason
    with pytest.raises(FolderFull):
        sandbox.run("pass", plain_folder, limits=limits)


def test_sparse_files_count_what_they_use(plain_folder):
    r = sandbox.run(
        "f = open('sparse', 'wb'); f.seek(60 << 20); f.write(b'x')",
        plain_folder,
        limits=Limits(data_bytes=8 * MIB),
    )
    assert r.exit_code == 0 and r.reason is None  # 60 MiB long, a few KiB on disk


def test_run_python_tells_the_model_the_folder_is_full(plain_folder):
    for i in range(sandbox.DEFAULT_LIMITS.data_entries + 1):
        (plain_folder / f"f{i}").touch()
    out = tools.run_python({"code": "print('hi')"}, plain_folder)
    assert out.is_error and "past its quota" in out.output and "hi" not in out.output
