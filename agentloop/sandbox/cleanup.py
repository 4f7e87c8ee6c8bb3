"""Folders the code wrote to: how big they are, and removing them whatever the code left in them.

What it follows: coreutils rather than Python's recursive walkers. shutil.rmtree recurses, and a
3,000-deep tree makes it raise RecursionError even with ignore_errors=True; GNU rm, chmod and du
walk with fts, which holds no stack per level, never follows a symbolic link, removes FIFOs and
sockets without opening them, and takes any name, newlines included. Modes are reset first (chmod -R
u+rwX) so a folder the code made unreadable or unwritable to its owner still empties; root needs no
reset, and inside the sandbox the code cannot own a file as anyone but the sandbox's user, nor set
an immutable attribute (no CAP_LINUX_IMMUTABLE).

Temporary folders carry the pid of the process that made them (`agentloop-run-PID-…`), so that
`sweep()`, run when the demo server starts, removes exactly those whose process is gone: a server
killed with -9 leaves its folders behind, and the next one removes them without touching those of a
server still running.

A conversation's folder is, as root, a tmpfs mounted on the folder (data_folder.create): it is
unmounted first, so a server killed with -9 leaves no mount behind after the next start's sweep.

What it leaves out: folders of a process whose pid has since been reused (kept: removing a live one
would be worse).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from agentloop.sandbox import cgroup

# agentloop-media: the host's own copies of a conversation's attachments, outside /data (media.py)
PREFIXES = ("agentloop-run", "agentloop-conversation", "agentloop-media", "agentloop-sandbox")
_OWNED = re.compile(rf"^({'|'.join(PREFIXES)})-(\d+)-")


def temp_folder(prefix: str, parent: Path | None = None) -> Path:
    """A new folder in the temporary folder (or `parent`), named for this process so sweep() knows
    whose it is."""
    assert prefix in PREFIXES, prefix
    return Path(tempfile.mkdtemp(prefix=f"{prefix}-{os.getpid()}-", dir=parent))


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it. Raises OSError if anything is left."""
    path = Path(path)
    if not os.path.lexists(path):
        return
    unmount(path)
    if os.geteuid() != 0 and path.is_dir() and not path.is_symlink():
        subprocess.run(["chmod", "-R", "u+rwX", "--", str(path)], capture_output=True)
    done = subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True, text=True
    )
    if os.path.lexists(path):
        raise OSError(f"could not remove {path}: {done.stderr.strip()}")


def unmount(path: Path) -> None:
    """Detach a file system mounted at `path` (a conversation's tmpfs: data_folder.create), so that
    what rm removes next is the folder under it. Lazily: a process still holding a file in it does
    not keep the folder from going. Nothing below `path` is unmounted: only root mounts, only there."""
    if os.geteuid() == 0 and not path.is_symlink() and os.path.ismount(path):
        subprocess.run(["umount", "--lazy", "--", str(path)], capture_output=True)


def measure(path: Path) -> tuple[int, int]:
    """(bytes on disk, entries) under `path`, itself included; sparse files count what they use."""

    def du(*flags: str) -> int:
        done = subprocess.run(
            ["du", "-s", "--one-file-system", *flags, "--", str(path)],
            capture_output=True,
            text=True,
        )
        # du prints what it could count even when it complains (of a file gone meanwhile, say)
        return int(done.stdout.split("\t", 1)[0])

    if os.geteuid() != 0:  # a folder the code made unreadable would be skipped: make it readable
        subprocess.run(["chmod", "-R", "u+rX", "--", str(path)], capture_output=True)
    return du("--block-size=1"), du("--inodes")


def ours(entry: Path) -> bool:
    """Whether we may remove `entry`: root may remove anything; others, what they own."""
    return os.geteuid() == 0 or entry.lstat().st_uid == os.geteuid()


def sweep(where: Path | None = None) -> list[Path]:
    """Remove the temporary folders and cgroups of processes that are gone; return what was
    removed."""
    where = Path(where or tempfile.gettempdir())
    removed = []
    for entry in where.iterdir():
        owner = _OWNED.match(entry.name)
        if not owner or cgroup.alive(int(owner.group(2))) or not ours(entry):
            continue
        try:
            remove_tree(entry)
        except OSError:  # left for its owner: a server that cannot sweep still starts
            continue
        removed.append(entry)
    return removed + cgroup.sweep()
