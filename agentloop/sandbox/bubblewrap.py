"""run_python's sandbox: run model-written Python code with bubblewrap, seeing one folder and nothing else.

What it follows: the usual bubblewrap recipe (as Flatpak uses it). The code gets its own user, PID, network,
IPC, UTS and cgroup namespaces; a root made of read-only /usr plus a fresh /proc, a minimal /dev and a private
/tmp; the conversation's folder as /data, the only host folder it can write; an empty environment. Inside it is
uid 65534 ("nobody") with no capabilities, and prlimit caps CPU seconds, memory, processes, file size and open
files. A wall-clock timeout kills the whole sandbox: bwrap's init is PID 1 of the sandbox, and when PID 1 dies
the kernel kills every process in its PID namespace, daemons included.

One detail is about root. The kernel never applies RLIMIT_NPROC to processes whose real uid is 0 (kernel/fork.c
exempts the root user), even inside a user namespace, so a server running as root could not bound a fork bomb.
As root we therefore start bwrap as the real user nobody, and lend it the conversation's folder for the run
(one run per folder at a time).

Around that: a seccomp filter (seccomp_filter.py) that refuses the calls which reach kernel state
no namespace isolates (the keyring, AF_VSOCK, io_uring, IP sockets whose buffers no cgroup counts,
...); a fresh anonymous session keyring (keyutils' `keyctl session -`), should the filter ever miss
a keyring call; a cgroup for the whole run (cgroup.py), whose memory limit counts what RLIMIT_AS
does not (memfd, tmpfs); /proc entries about the host covered (HIDDEN_PROC); and the quota on /data,
which the kernel enforces during the call in the folders the project makes (data_folder.py), and
which is checked after each run elsewhere (`past_quota`).

What it leaves out: a kernel quota on a folder without one (not root, or a folder the reader named:
one run may write what its time and RLIMIT_FSIZE allow before the check refuses the next), an inode
limit on /tmp when not root (bwrap's --tmpfs takes a size only; a cgroup, where there is one, still
bounds the inodes' memory), and hiding bwrap's own command line, which the code can read in
/proc/1/cmdline (it names the folder's host path, nothing secret).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from agentloop.sandbox import cgroup, cleanup, data_folder, seccomp_filter

DEFAULT_TIMEOUT = 10.0  # seconds of wall clock before the sandbox is killed
# The uid and gid the code runs as (inside always; outside too when the server is root)
NOBODY = 65534
INSTALL = "sudo apt-get install bubblewrap"


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 10  # RLIMIT_CPU, per process: SIGXCPU at this, SIGKILL one second later
    memory_bytes: int = 512 << 20  # RLIMIT_AS, per process: allocations past it fail (MemoryError)
    processes: int = 16  # RLIMIT_NPROC: processes and threads in the sandbox, bwrap's init included
    file_bytes: int = 64 << 20  # RLIMIT_FSIZE: the largest file the code may write
    open_files: int = 256  # RLIMIT_NOFILE
    tmp_bytes: int = 64 << 20  # size of the private /tmp and /dev/shm, which live in memory
    output_bytes: int = 64 << 10  # kept of stdout and of stderr; the rest is read and dropped
    sandbox_memory_bytes: int = 512 << 20  # the cgroup: all processes, memfd and /tmp included
    tmp_inodes: int = 4096  # files and folders in /tmp and /dev/shm together (as root: staged())
    # The quota on /data. The folders the project makes have it from the kernel (data_folder.create);
    # a folder without (not root, or one the reader named) is measured after each run against these.
    data_bytes: int = data_folder.DATA_BYTES
    data_entries: int = data_folder.DATA_ENTRIES


DEFAULT_LIMITS = Limits()


@dataclass
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: (
        int | None
    )  # bash's convention: 128 + N when killed by signal N; None when killed at the timeout
    timed_out: bool  # killed by the wall-clock limit
    truncated: bool  # stdout or stderr was cut at Limits.output_bytes
    ms: float  # wall-clock time of the whole run
    reason: str | None = None  # why the run ended early, in words, or None
    cgroup: str = cgroup.NONE  # what bounded the sandbox's memory as a whole, in words


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here. The code was not run: never unsandboxed."""


class FolderFull(SandboxUnavailable):
    """The conversation's folder is past its quota: the code was not run."""


def find_python() -> tuple[str, list[str]]:
    """The interpreter the sandbox runs, and the read-only bind it needs beyond /usr.

    The system's python3, not this project's venv: the sandbox sees /usr and nothing of the repository."""
    for path in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(path, os.X_OK):
            return path, []
    # No system python3: the interpreter this venv was made from, binding exactly its install prefix
    # (say /root/.pyenv/versions/3.11.7), never the rest of the home directory around it.
    prefix = os.path.realpath(sys.base_prefix)
    return f"{prefix}/bin/python3", ["--ro-bind", prefix, prefix]


# /proc entries that tell the code about the host and nothing a run needs, each covered: a file with
# /dev/null bound read-only (bwrap binds without devices, so opening it fails with EACCES), a folder
# with an empty read-only tmpfs. Docker masks most of these the same way.
HIDDEN_PROC = {
    "keys": "the keys the code's user may view (when not root, the server's user's)",
    "key-users": "the same keyring's users and quotas",
    "cmdline": "the host kernel's command line (it may carry tokens or disk keys)",
    "config.gz": "the host kernel's configuration, a map for exploits",
    "bootconfig": "the host's boot configuration",
    "sys/kernel/random/boot_id": "an id of this boot of the host, the same in every sandbox",
    "kallsyms": "the kernel's symbols",
    "kcore": "the kernel's memory as a core file",
    "modules": "the host's kernel modules",
    "timer_list": "the host's timers",
    "sched_debug": "the host's scheduler, with its processes' names",
    "latency_stats": "the host's latencies",
    "interrupts": "the host's devices and their interrupts, a side channel",
    "softirqs": "the same, for software interrupts",
    "iomem": "the host's physical memory map",
    "ioports": "the host's I/O ports",
    "pressure": "the whole host's CPU, memory and I/O pressure, a side channel",
    "acpi": "the host's firmware tables",
    "asound": "the host's sound cards",
    "scsi": "the host's disks",
    "driver": "the host's drivers",
    "irq": "the host's interrupt lines",
}


def hidden_proc_here() -> list[str]:
    """The entries of HIDDEN_PROC this kernel has (a mount needs its target)."""
    return [f"/proc/{name}" for name in HIDDEN_PROC if os.path.exists(f"/proc/{name}")]


def hidden_proc() -> list[str]:
    """bwrap's arguments covering HIDDEN_PROC."""
    args = []
    for path in hidden_proc_here():
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    return args


def system_dirs() -> list[str]:
    """/bin, /lib, ... are symlinks into /usr on a merged-/usr system (recreate the link), real folders on
    older ones (bind them read-only)."""
    args = []
    for path in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


@dataclass(frozen=True)
class Stage:
    """Where bwrap finds what it binds, and what must run around it (as root: as_nobody)."""

    data: str  # the host path bwrap binds at /data
    tmp: str | None  # as root, a tmpfs holding tmp/ and shm/, inodes limited; None: bwrap's own
    wrap: Callable[[list[str]], list[str]]


def bwrap_args(
    stage: Stage, code_fd: int, filter_fd: int, limits: Limits = DEFAULT_LIMITS
) -> list[str]:
    """The bubblewrap command line: the sandbox, one line at a time."""
    return [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",  # new user, PID, network, IPC, UTS and cgroup namespaces: no network but a loopback
        "--unshare-user",  # the user namespace is required, not "if possible"
        "--disable-userns",  # and the code cannot make a nested one (where it would be root)
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),  # inside, the code is nobody
        "--cap-drop",
        "ALL",  # with no capabilities
        "--hostname",
        "sandbox",
        "--die-with-parent",  # if the server dies, the sandbox dies with it
        "--new-session",  # setsid(): the code cannot type into our terminal (TIOCSTI)
        "--ro-bind",
        "/usr",
        "/usr",  # the system, read-only: python3 and its standard library
        *system_dirs(),
        *find_python()[1],  # python3's install prefix, read-only, when it is not under /usr
        "--proc",
        "/proc",  # a fresh /proc for the sandbox's PID namespace: host processes are invisible
        # /proc/keys lists the keys the code's user may view: when not root, the server's user.
        *hidden_proc(),  # what /proc says of the host that no run needs: covered (HIDDEN_PROC)
        "--dev",
        "/dev",  # null, zero, full, random, urandom, tty: no disks
        *memory_folders(stage, limits),  # a private /tmp and /dev/shm in memory, not the host's
        "--bind",
        stage.data,
        "/data",  # the conversation's folder: the only host folder it writes
        "--ro-bind-data",
        str(code_fd),
        "/tmp/main.py",  # the code, copied in from a file descriptor
        "--seccomp",
        str(filter_fd),  # the system calls it may not make (seccomp_filter.py)
        "--remount-ro",
        "/dev",  # no new files in /dev
        "--remount-ro",
        "/",  # nor in the root: only /data, /tmp and /dev/shm are writable
        "--chdir",
        "/data",
        "--clearenv",  # none of the server's environment (its secrets) gets in; then a minimal one
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "USER",
        "nobody",  # for getpass.getuser(): there is no /etc/passwd
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "PYTHONPATH",
        "/data",  # `import helper` finds the helper.py the code saved in /data
    ]


def memory_folders(stage: Stage, limits: Limits) -> list[str]:
    """/tmp and /dev/shm (multiprocessing's semaphores live there): bwrap's tmpfs of a bounded size,
    or as root the tmpfs staged() mounted, bounded in inodes too (bwrap's --tmpfs cannot be)."""
    if stage.tmp:
        return ["--bind", f"{stage.tmp}/tmp", "/tmp", "--bind", f"{stage.tmp}/shm", "/dev/shm"]
    return [
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/tmp",
    ]


# keyctl says "Joined session keyring: N" on stderr before it execs what follows. The outer bash
# keeps stderr in a free descriptor of its choosing ({saved}) and lets keyctl write to /dev/null;
# the inner bash, which keyctl runs, puts stderr back and closes the spare before it execs bwrap.
KEYRING = 'exec {saved}>&2 2>/dev/null; exec keyctl session - bash -c "$0" bash "$saved" "$@"'
STDERR_BACK = 'fd=$1; shift; exec 2>&"$fd" {fd}>&-; exec "$@"'


def keyring_args() -> list[str]:
    """A new anonymous session keyring for bwrap and all it starts, so the caller's keyring is out
    of reach even if the seccomp filter let a keyring call through (keyctl joins it, then execs)."""
    return ["bash", "-c", KEYRING, STDERR_BACK] if shutil.which("keyctl") else []


def prlimit_args(limits: Limits) -> list[str]:
    """Resource limits, set inside the sandbox so RLIMIT_NPROC counts only the sandbox's own processes
    (it counts per user namespace); set before bwrap, it would count all of the server user's processes."""
    return [
        "prlimit",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",  # soft < hard, so SIGXCPU says "CPU time"
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        "--core=0",  # a crash leaves no core file in /data
    ]


def command(stage: Stage, code_fd: int, filter_fd: int, limits: Limits) -> list[str]:
    """keyctl joins a fresh keyring and runs bwrap, which runs prlimit, which runs python3 on the
    code. -u: unbuffered, so what the code printed before a kill still reaches us."""
    python, _ = find_python()
    return [
        *keyring_args(),
        *bwrap_args(stage, code_fd, filter_fd, limits),
        "--",
        *prlimit_args(limits),
        "--",
        python,
        "-u",
        "/tmp/main.py",
    ]


STAGE = (  # as_nobody's shell: a tmpfs at $2 with data/ (the folder, bound), tmp/ and shm/ in it
    'mount -t tmpfs -o "size=$3,nr_inodes=$4,mode=0755" tmpfs "$2" && mkdir "$2/data" '
    '&& mkdir -m 1777 "$2/tmp" "$2/shm" && mount --bind "$1" "$2/data" && shift 4 && exec "$@"'
)


def as_nobody(folder: str, stage: str, limits: Limits, argv: list[str]) -> list[str]:
    """Root only: run argv as the real user nobody, with a tmpfs at `stage` holding the folder at
    data/.

    nobody may not be allowed to walk to the folder (pytest's temporary folders sit under a 0700
    one), so root mounts it at a stage folder that nobody can reach, in a private mount namespace
    the host never sees. The same tmpfs holds the sandbox's /tmp and /dev/shm, with the inode limit bwrap's own
    tmpfs lacks (nr_inodes; four inodes are the tmpfs's own folders)."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "sh",
        "-c",
        STAGE,
        "sh",
        folder,
        stage,
        str(limits.tmp_bytes),
        str(limits.tmp_inodes + 4),
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--",
        *argv,
    ]


def owner_and_mode(folder: Path) -> tuple[int, int, int]:
    """Whose the folder is, and its permission bits, to give back after a run. A folder still lent
    to nobody (a run killed with -9 never gave it back) goes to the owner of the folder around it,
    mode 0700."""
    st = folder.stat()
    if st.st_uid == NOBODY:
        around = folder.parent.stat()
        return around.st_uid, around.st_gid, 0o700
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode) & 0o777  # no set-id bits


@contextmanager
def staged(folder: Path, limits: Limits):
    """Yield the Stage for a run in `folder`: not root, the folder itself; as root, as_nobody's."""
    if os.geteuid() != 0:
        yield Stage(str(folder), None, lambda argv: argv)
        return
    uid, gid, mode = owner_and_mode(folder)
    os.chown(
        folder, NOBODY, NOBODY
    )  # lend the folder to the sandbox's user for the run, so it can write there
    stage = str(cleanup.temp_folder("agentloop-sandbox"))  # named for our pid, for sweep()
    os.chmod(stage, 0o755)
    try:
        yield Stage(
            f"{stage}/data", stage, lambda argv: as_nobody(str(folder), stage, limits, argv)
        )
    finally:
        os.rmdir(stage)  # empty on the host: the tmpfs only ever existed in the private namespace
        # Given back as it was: the code may have made /data world-writable and set-id (07777).
        # Files the code made stay nobody's, so the next run may change them.
        os.chown(folder, uid, gid)
        os.chmod(folder, mode)


def run(
    code: str, folder: Path, timeout: float = DEFAULT_TIMEOUT, limits: Limits = DEFAULT_LIMITS
) -> SandboxResult:
    """Run `code` with python3 in the sandbox, `folder` seen as /data (its working folder)."""
    folder = Path(folder).resolve(strict=True)
    if not folder.is_dir():
        raise NotADirectoryError(folder)
    check()
    if data_folder.kernel_quota(folder):  # the kernel refuses writes past it, during the call
        return _run(code, folder, timeout, limits)
    if full := past_quota(folder, limits):
        raise FolderFull(f"{full}, so the code was not run. Remove files from the folder to go on.")
    result = _run(code, folder, timeout, limits)
    if full := past_quota(folder, limits):
        return replace(
            result,
            reason=f"{result.reason + '; ' if result.reason else ''}{full}: "
            "the next run will be refused",
        )
    return result


def past_quota(folder: Path, limits: Limits) -> str | None:
    """The quota on /data, in words, when the folder is past it; None when it is within."""
    used, entries = cleanup.measure(folder)
    if used <= limits.data_bytes and entries <= limits.data_entries:
        return None
    return (
        f"the folder /data holds {used >> 20} MiB in {entries} files and folders, "
        f"past its quota of {limits.data_bytes >> 20} MiB and {limits.data_entries} entries"
    )


BWRAP_TASKS = 2  # bwrap and its init (the sandbox's PID 1), in the cgroup beside the code


def _run(code: str, folder: Path, timeout: float, limits: Limits) -> SandboxResult:
    code_fd = os.memfd_create(
        "main.py", 0
    )  # any size, no temporary file: bwrap copies it into /tmp
    os.write(
        code_fd, code.encode(errors="replace")
    )  # a lone surrogate from JSON becomes "?", not a crash
    os.lseek(code_fd, 0, os.SEEK_SET)
    filter_fd = seccomp_filter.program_fd()
    group = cgroup.make(limits.sandbox_memory_bytes, limits.processes + BWRAP_TASKS)
    start = time.monotonic()
    try:
        with staged(folder, limits) as stage:
            proc = subprocess.Popen(
                group.wrap(stage.wrap(command(stage, code_fd, filter_fd, limits))),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(code_fd, filter_fd),
                env={
                    "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"
                },  # bwrap's own environment shows in /proc/1/environ
                cwd="/",  # and so does its working folder (as PWD)
                start_new_session=True,  # its own process group, for killpg
            )
            try:
                out, err, timed_out, truncated = read_capped(
                    proc, start + timeout, limits.output_bytes
                )
            finally:
                kill(proc)
    finally:
        os.close(code_fd)
        os.close(filter_fd)
        out_of_memory = group.oom_killed() > 0
        group.close()
    exit_code = None if timed_out else proc.returncode
    return SandboxResult(
        out,
        err,
        exit_code,
        timed_out,
        truncated,
        (time.monotonic() - start) * 1000,
        explain(exit_code, timed_out, err, timeout, out_of_memory),
        group.kind,
    )


def read_capped(proc: subprocess.Popen, deadline: float, cap: int) -> tuple[str, str, bool, bool]:
    """Read stdout and stderr as they come, keeping `cap` bytes of each; kill the sandbox at `deadline`.

    Reading both at once means neither pipe fills up and blocks the code; dropping past the cap means a
    print loop cannot fill the server's memory. Pipes close when every process holding them is gone."""
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    cut = {proc.stdout: False, proc.stderr: False}
    timed_out = False
    sel = selectors.DefaultSelector()
    for pipe in kept:
        sel.register(pipe, selectors.EVENT_READ)
    while sel.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            if timed_out:
                break  # killed two seconds ago and the pipes are still open: stop waiting for them
            timed_out = True
            kill(proc)
            deadline = time.monotonic() + 2.0  # time to read what is left in the pipes
            continue
        for key, _ in sel.select(left):
            chunk = os.read(key.fd, 1 << 16)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            buf = kept[key.fileobj]
            room = cap - len(buf)
            cut[key.fileobj] |= len(chunk) > room
            buf += chunk[: max(room, 0)]
    sel.close()

    def text(pipe) -> str:
        s = kept[pipe].decode("utf-8", errors="replace")
        return s + f"\n[… output cut at {cap} bytes …]" if cut[pipe] else s

    return text(proc.stdout), text(proc.stderr), timed_out, any(cut.values())


def kill(proc: subprocess.Popen) -> None:
    """Kill bwrap's process group and reap it. --die-with-parent then kills bwrap's init (the sandbox's PID 1),
    and the kernel kills everything else in the sandbox's PID namespace."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def explain(
    exit_code: int | None, timed_out: bool, stderr: str, timeout: float, out_of_memory: bool = False
) -> str | None:
    """Why the run ended early, in one short sentence for the model (None: it ended by itself).

    The exit code is the fact; the rest reads the traceback, so it is a good guess, not a proof."""
    if timed_out:
        return f"killed after the {timeout:g} s wall-clock limit"
    if not exit_code:
        return None
    if out_of_memory:  # the kernel killed a process for the cgroup's limit, which counts them all
        return "memory limit of the whole sandbox reached"
    if exit_code == 128 + signal.SIGXCPU:
        return "CPU time limit reached"
    if exit_code == 128 + signal.SIGXFSZ or "File too large" in stderr:
        return "file size limit reached"
    if "MemoryError" in stderr:
        return "memory limit reached"
    if "BlockingIOError" in stderr and "fork" in stderr:
        return "process limit reached"
    if exit_code > 128 and exit_code - 128 in signal.valid_signals():
        return f"killed by {signal.Signals(exit_code - 128).name}"
    return None


# Set once a first sandbox has started in this process, so check() tries one only until then (a test of
# a machine where none can start replaces it with a fresh Event).
started = threading.Event()


def check() -> None:
    """Raise SandboxUnavailable unless bubblewrap is installed and can make its namespaces here."""
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed, so run_python cannot run code: it never runs code "
            f"outside a sandbox. Install it with: {INSTALL}"
        )
    if started.is_set():
        return
    try:
        with tempfile.TemporaryDirectory() as folder:
            result = _run("pass", Path(folder), 30.0, DEFAULT_LIMITS)
        problem = (
            (result.stderr.strip() or f"exit code {result.exit_code}")
            if result.exit_code != 0
            else None
        )
    except (OSError, seccomp_filter.FilterUnavailable) as e:  # a program it needs is missing
        problem = str(e)
    if problem:
        raise SandboxUnavailable(
            f"bubblewrap is installed but could not start the sandbox: {problem} "
            "(it needs user namespaces, util-linux's prlimit, python3-seccomp for its filter; "
            "as root also unshare and setpriv). "
            "run_python never runs code outside a sandbox."
        )
    started.set()
