"""The sandbox's memory as a whole, and the quota on /data (issue 11, attack 2, and more of the same
family).

RLIMIT_AS bounds each process's address space; memory held outside it (a memfd's pages, files in
/tmp, pipe buffers) and memory spread over many processes is the cgroup's to bound. Each attempt
prints how much it holds after each step, so the host can check the last figure the code reached
against the limit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentloop import cgroup, sandbox, tools
from agentloop.sandbox import FolderFull, Limits

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


# ---- the quota on /data --------------------------------------------------------------------------


def test_writing_past_the_quota_refuses_the_next_run(folder):
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


def test_many_small_files_count_against_the_quota(folder):
    limits = Limits(data_entries=500)
    r = sandbox.run("import os\nfor i in range(800): os.mkdir(f'd{i}')", folder, limits=limits)
    assert "800" not in r.stdout and "past its quota" in r.reason
    with pytest.raises(FolderFull):
        sandbox.run("pass", folder, limits=limits)


def test_sparse_files_count_what_they_use(folder):
    r = sandbox.run(
        "f = open('sparse', 'wb'); f.seek(60 << 20); f.write(b'x')",
        folder,
        limits=Limits(data_bytes=8 * MIB),
    )
    assert r.exit_code == 0 and r.reason is None  # 60 MiB long, a few KiB on disk


def test_run_python_tells_the_model_the_folder_is_full(folder):
    for i in range(sandbox.DEFAULT_LIMITS.data_entries + 1):
        (folder / f"f{i}").touch()
    out = tools.run_python({"code": "print('hi')"}, folder)
    assert out.is_error and "past its quota" in out.output and "hi" not in out.output
