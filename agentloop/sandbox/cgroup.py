"""A control group per sandbox run: one memory limit and one process limit for all of the sandbox's
processes.

What it follows: what systemd and container runtimes do. Per-process limits (RLIMIT_AS) do not see
memory a process holds outside its address space: a memfd's pages, files in a tmpfs, the kernel's
inodes for them. A cgroup charges all of these to the group, and its limit holds for the sum,
whatever the number of processes. Four ways, the first that works here:

- cgroup v1, as root: a folder in the `memory` and in the `pids` hierarchies (memory.limit_in_bytes,
  memory.memsw.limit_in_bytes where swap is accounted, pids.max);
- cgroup v2, as root: a folder under /sys/fs/cgroup/agentloop (memory.max, memory.swap.max=0,
  pids.max); in a container, whose own processes sit in the root it sees, they first move to a leaf
  (`hand_down`);
- not root, with a systemd user session: `systemd-run --user --scope` with MemoryMax,
  MemorySwapMax=0 and TasksMax (systemd makes the cgroup in the subtree it delegates to the user);
- none: the per-process limits are all that hold, and `kind` says so in words.

The sandbox's first process enters the group before it execs anything (`wrap`), so nothing escapes
it.

What it leaves out: a delegated v2 subtree without systemd (it needs the server itself moved into a
leaf first), CPU and I/O weights (the CPU-seconds limit and the timeout bound a run's CPU; nothing
bounds its disk bandwidth).
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "agentloop"  # our folder in each hierarchy; each run is PARENT/run-PID-N
NONE = "none: no cgroup can be made here, so only the per-process limits hold"
_counter = itertools.count()


@dataclass
class Group:
    """One run's cgroup: how to enter it, and what it saw."""

    kind: str  # "cgroup v1", "cgroup v2", "systemd-run --user --scope", or NONE
    folders: list[Path] = field(
        default_factory=list
    )  # the folders made for this run (v1: memory and pids)
    prefix: list[str] = field(
        default_factory=list
    )  # systemd-run's command line, when that is the way

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the group: a shell puts its own pid into each group, then execs argv."""
        if self.prefix:
            return [*self.prefix, *argv]
        if not self.folders:
            return argv
        procs = [str(f / "cgroup.procs") for f in self.folders]
        enter = (
            'n=$1; shift; for i in $(seq "$n"); do echo $$ > "$1" || exit 125; shift; done; '
            'exec "$@"'
        )
        return ["sh", "-c", enter, "sh", str(len(procs)), *procs, *argv]

    def oom_killed(self) -> int:
        """How many processes the kernel killed for the group's memory limit (0 without a group)."""
        for f in self.folders:
            for name in ("memory.events", "memory.oom_control"):  # v2, v1
                if (f / name).exists():
                    found = re.search(r"^oom_kill (\d+)$", (f / name).read_text(), re.M)
                    return int(found.group(1)) if found else 0
        return 0

    def close(self) -> None:
        """Kill whatever is left in the group and remove its folders."""
        for f in self.folders:
            remove(f)


def remove(folder: Path) -> None:
    """Remove a cgroup folder, killing its processes first (rmdir fails while any is in it)."""
    for _ in range(100):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # still busy: processes dying, or not yet killed
            kill_members(folder)
            time.sleep(0.02)
    raise OSError(f"cgroup {folder} still has processes after two seconds")


def kill_members(folder: Path) -> None:
    if (folder / "cgroup.kill").exists():  # v2, kernel 5.14 and later: one write kills them all
        (folder / "cgroup.kill").write_text("1")
        return
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def v1_roots() -> tuple[Path, Path] | None:
    """The v1 `memory` and `pids` hierarchies, when both are mounted and we may write to them."""
    memory, pids = ROOT / "memory", ROOT / "pids"
    if all((p / "cgroup.procs").exists() and os.access(p, os.W_OK) for p in (memory, pids)):
        return memory, pids
    return None


def v2_root() -> Path | None:
    """The v2 hierarchy with the memory and pids controllers, when we may write to it (as root)."""
    controllers = ROOT / "cgroup.controllers"
    if controllers.exists() and os.access(ROOT, os.W_OK):
        if {"memory", "pids"} <= set(controllers.read_text().split()):
            return ROOT
    return None


@functools.cache
def systemd_scope_works() -> bool:
    """Whether `systemd-run --user --scope` works here (a systemd user session); tried once per
    process (`systemd_scope_works.cache_clear()` tries again)."""
    if not shutil.which("systemd-run"):
        return False
    try:
        done = subprocess.run(
            ["systemd-run", "--user", "--scope", "--quiet", "--", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def kind() -> str:
    """Which way works on this machine, in words (NONE when none): a group is made and removed."""
    group = make(64 << 20, 8)
    group.close()
    return group.kind


def make(memory_bytes: int, tasks: int) -> Group:
    """A new group for one run, with its limits set, by the first way that works here; a way that
    fails (a hierarchy we may not change after all) gives way to the next, and last to NONE."""
    name = f"run-{os.getpid()}-{next(_counter)}"
    for way in (v1_group, v2_group, systemd_group):
        made: list[Path] = []
        try:
            group = way(name, memory_bytes, tasks, made)
        except OSError:
            for f in reversed(made):
                remove(f)
            continue
        if group:
            return group
    return Group(NONE)


def v1_group(name: str, memory_bytes: int, tasks: int, made: list[Path]) -> Group | None:
    if not (roots := v1_roots()):
        return None
    memory, pids = (r / PARENT / name for r in roots)
    for f in (memory, pids):
        f.mkdir(parents=True)
        made.append(f)
    (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
    if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounted: memory + swap, no swap
        (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
    (memory / "memory.swappiness").write_text("0")
    (pids / "pids.max").write_text(str(tasks))
    return Group("cgroup v1", [memory, pids])


def v2_group(name: str, memory_bytes: int, tasks: int, made: list[Path]) -> Group | None:
    if not (root := v2_root()):
        return None
    parent = root / PARENT
    parent.mkdir(exist_ok=True)
    hand_down(root)
    (parent / "cgroup.subtree_control").write_text("+memory +pids")
    f = parent / name
    f.mkdir()
    made.append(f)
    (f / "memory.max").write_text(str(memory_bytes))
    if (f / "memory.swap.max").exists():
        (f / "memory.swap.max").write_text("0")
    (f / "pids.max").write_text(str(tasks))
    return Group("cgroup v2", [f])


LEAF = "agentloop-others"  # where a container's own processes move, as Docker-in-Docker moves them


def hand_down(root: Path) -> None:
    """Enable memory and pids for the children of `root`. A v2 cgroup may not both hold processes
    and give controllers to its children; the real root is exempt, but in a container `root` is the
    container's own cgroup (EBUSY). There its processes move first into a leaf of their own."""
    try:
        (root / "cgroup.subtree_control").write_text("+memory +pids")
        return
    except OSError as e:
        if e.errno != errno.EBUSY:
            raise
    (root / LEAF).mkdir(exist_ok=True)
    for pid in (root / "cgroup.procs").read_text().split():
        try:
            (root / LEAF / "cgroup.procs").write_text(pid)
        except OSError:  # gone meanwhile
            pass
    (root / "cgroup.subtree_control").write_text("+memory +pids")


def systemd_group(name: str, memory_bytes: int, tasks: int, made: list[Path]) -> Group | None:
    if os.geteuid() == 0 or not systemd_scope_works():
        return None
    limits = [f"MemoryMax={memory_bytes}", "MemorySwapMax=0", f"TasksMax={tasks}"]
    prefix = ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
    for limit in limits:
        prefix += ["-p", limit]
    return Group("systemd-run --user --scope", prefix=[*prefix, "--"])


def sweep() -> list[Path]:
    """Remove the groups of runs whose process is gone (killed before it could remove them)."""
    removed = []
    for root in [*(v1_roots() or ()), *([v2_root()] if v2_root() else [])]:
        parent = root / PARENT
        for f in parent.glob("run-*") if parent.is_dir() else ():
            owner = re.match(r"run-(\d+)-", f.name)
            if owner and not alive(int(owner.group(1))):
                remove(f)
                removed.append(f)
    return removed


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
