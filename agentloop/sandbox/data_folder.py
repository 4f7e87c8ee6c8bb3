"""The conversation's folder, which run_python's code sees as /data, from the host's side.

The rule (chapter 13): host code never trusts /data. Whatever the model's code can leave there (a
symbolic link to a root-only file, a FIFO, a socket, a name with a newline in it, a package named like
one of ours, a million empty files) is hostile input to every host-side reader of the folder. So:

- The folder is made with a quota the kernel enforces during a call (`create`). As root it is a tmpfs
  of DATA_BYTES and DATA_ENTRIES inodes mounted on a new temporary folder (nosuid, nodev): a write
  past either fails inside the call with ENOSPC, which the code sees, and the host's disk is never
  used. Without root no file system can be mounted for it, so it is a plain folder, measured after
  each run (`sandbox.past_quota`); `agentloop sandbox --check` says which holds.
- A host reader opens what is in it only through `open_file` and `open_folder`: one name at a time,
  each relative to the descriptor of the folder above it, never following a link (O_NOFOLLOW),
  never waiting on a FIFO (O_NONBLOCK), and accepting only a regular file, or a folder to list.
  There is no check apart from the open, so a link swapped in between the two cannot redirect it.
- Names it shows are escaped (`shown`): a name with a newline cannot forge a line of a listing.
- Host code never imports from, runs in, or takes its working folder from /data (pi's tool runner:
  pi_harness.py), and media is decoded from the host's own copy of an attachment, not from /data.

What it leaves out: a kernel quota without root (a user namespace could mount a tmpfs, but it would
not outlive one run), and a quota on a folder the reader names (`agentloop run --folder DIR`): the
reader's own folder is not replaced by a tmpfs, so there the quota is the check after each run.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from agentloop.sandbox import cleanup

DATA_BYTES = 256 << 20  # what the files in /data may hold together
DATA_ENTRIES = 10_000  # files and folders in /data, the folder itself included
MOUNT_OPTIONS = "nosuid,nodev,mode=0700"  # no set-id programs, no device files
OPEN = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class Refused(ValueError):
    """A path in /data that a host reader will not open, in words the model can act on."""


# ---- making the folder ------------------------------------------------------------------------------------------


def create(
    data_bytes: int = DATA_BYTES,
    data_entries: int = DATA_ENTRIES,
    prefix: str = "agentloop-conversation",
    parent: Path | None = None,
) -> Path:
    """A new conversation's folder, named for this process (cleanup.sweep removes it once we are
    gone). As root it is a tmpfs of `data_bytes` and `data_entries` inodes; where the mount is
    refused (not root, or a container without CAP_SYS_ADMIN) it is a plain folder."""
    folder = cleanup.temp_folder(prefix, parent)
    if os.geteuid() == 0:
        options = f"size={data_bytes},nr_inodes={data_entries},{MOUNT_OPTIONS}"
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "agentloop-data", str(folder)],
            capture_output=True,
        )
    return folder


def kernel_quota(folder: Path) -> tuple[int, int] | None:
    """(bytes, inodes) of the tmpfs `create` mounted at `folder`, or None when the folder has no
    quota the kernel enforces (a plain folder: the check after each run is all there is)."""
    if not is_our_mount(folder):
        return None
    fs = os.statvfs(folder)
    return fs.f_blocks * fs.f_frsize, fs.f_files


def is_our_mount(folder: Path) -> bool:
    """Whether a tmpfs named agentloop-data is mounted exactly at `folder` (/proc/self/mountinfo)."""
    where = os.path.realpath(folder)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split(" ")
        # mount point is field 5 (octal-escaped); after " - ": file system type, source, options
        sep = fields.index("-")
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        if point == where and fields[sep + 1 : sep + 3] == ["tmpfs", "agentloop-data"]:
            return True
    return False


# ---- reading what is in it ---------------------------------------------------------------------------------------


def relative(path: str) -> list[str]:
    """The names of `path` below /data, given as "notes.txt", "sub/notes.txt" or "/data/notes.txt".
    `..` is taken away by the names alone (no link is ever followed, so the names are the path);
    refused: a path elsewhere, or one whose `..` leads above /data."""
    if path == "/data" or path.startswith("/data/"):
        path = path[len("/data") :]
    elif path.startswith("/"):
        raise Refused(f"{path} is outside /data: only the files in /data can be read.")
    names: list[str] = []
    for name in path.split("/"):
        if name == "..":
            if not names:
                raise Refused(f"{path} leads outside /data: only the files in /data can be read.")
            names.pop()
        elif name not in ("", "."):
            names.append(name)
    return names


def _walk(folder: Path, names: list[str], path: str, wanted: str = "folder") -> int:
    """A descriptor of the folder `names` lead to, opened one name at a time without following a
    link. Refused, with why: a name that is missing, a link, or not a folder."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | OPEN)
    try:
        for name in names:
            below = _open(fd, name, os.O_DIRECTORY, path, wanted)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(fd: int, name: str, flags: int, path: str, wanted: str) -> int:
    """`name` in the folder `fd`, opened read-only with `flags`, no link followed, never blocking."""
    try:
        return os.open(name, os.O_RDONLY | flags | OPEN, dir_fd=fd)
    except OSError as e:
        raise Refused(_why(fd, name, path, wanted, e)) from None


def _why(fd: int, name: str, path: str, wanted: str, e: OSError) -> str:
    """Why `name` did not open, in words: told by what it is (lstat), not by the error alone."""
    try:
        kind = stat.S_IFMT(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        kind = None
    if kind is None:
        return f"There is no {wanted} {path} in /data" + (
            ": list_files shows the files there." if wanted == "file" else "."
        )
    if kind == stat.S_IFLNK:
        return f"{path} is or goes through a link: host tools do not follow links in /data."
    if kind == stat.S_IFREG:
        return f"{path} is a file, not a folder: use read_file to read it."
    if kind != stat.S_IFDIR:
        return f"{path} is not a regular file."
    return f"Cannot read {path}: {e.strerror}."


def open_folder(folder: Path, path: str) -> int:
    """A descriptor of the folder `path` in /data (for os.scandir). Refused: a link, a file."""
    return _walk(folder, relative(path), path)


def open_file(folder: Path, path: str) -> int:
    """A descriptor of the regular file `path` in /data, for reading. Refused: a link, a FIFO, a
    socket, a device, a folder; opening never blocks."""
    names = relative(path)
    if not names:
        raise Refused(f"{path} is a folder: use list_files to see what is in it.")
    above = _walk(folder, names[:-1], path, "file")
    try:
        fd = _open(above, names[-1], 0, path, "file")
    finally:
        os.close(above)
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        if kind == stat.S_IFDIR:
            raise Refused(f"{path} is a folder: use list_files to see what is in it.")
        raise Refused(f"{path} is not a regular file.")
    return fd


# Control characters (C0 with tab and newline, DEL, C1), the line and paragraph separators, and the
# marks that reorder text on screen: each shown as its escape, so a name is one line, as written.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(name: str) -> str:
    """A name from /data as host code shows it: control characters escaped (\\n, \\u001b), and a
    name that is not valid UTF-8 with its bad bytes escaped as Python does (surrogateescape)."""
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode(), name)
