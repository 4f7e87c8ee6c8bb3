"""pi's session file, kept in the conversation's folder between questions (chapter 16).

pi writes each conversation it has as a session: one JSON object a line (its session-format.md). The
next question in the same conversation starts pi again on that file, so the model reads all of it. The
file lives in the conversation's folder, the sandbox's /data, which the model's code can write: host
code treats it as hostile input (sandbox/data_folder.py). So pi never opens a path in /data. Before a
follow-up, `take` copies the file out of /data into pi's private folder, opened the way data_folder
opens anything there (one name at a time, no link followed, a regular file only, never blocking) and
at most MAX_BYTES of it; pi works on that copy. After the run, `keep` puts pi's copy back, written
under a new name and renamed over the old one, so a link the code left in its place is replaced, not
followed.

What is in the file is not checked here: it is pi's to read, as it reads any session. The code of the
model can rewrite it, and the next question then shows the model whatever conversation the file holds
(chapter 16 says so). Left out: pi's branches and compaction (the book's pi starts with compaction off).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from agentloop.sandbox import data_folder

NAME = ".pi-session.jsonl"  # in the conversation's folder, beside the files the model works on
# A session this large is refused: a long conversation of a small model is far less.
MAX_BYTES = 8 << 20


def take(folder: Path, into: Path) -> None:
    """Copy the session kept in `folder` to `into`, pi's private copy. Raises data_folder.Refused, in
    words a reader can act on, when there is none, or it is a link, not a regular file, or too large."""
    fd = data_folder.open_file(folder, NAME)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_BYTES:
            raise data_folder.Refused(
                f"/data/{NAME} holds {size} bytes, more than the {MAX_BYTES} a session may."
            )
        data = b""
        while len(data) <= MAX_BYTES and (chunk := os.read(fd, 1 << 20)):
            data += chunk  # a file that grows while read is cut, then refused below
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise data_folder.Refused(f"/data/{NAME} grew past {MAX_BYTES} bytes while it was read.")
    into.write_bytes(data)


def keep(source: Path, folder: Path) -> None:
    """Put pi's session `source` in `folder` as NAME: written to a fresh name first (O_EXCL and
    O_NOFOLLOW: nothing there is opened), then renamed over whatever NAME is now, so a link in its
    place is replaced rather than written through. Nothing when pi wrote no session (no message)."""
    if not source.is_file():
        return
    data = source.read_bytes()[:MAX_BYTES]
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | data_folder.OPEN)
    try:
        temp = f"{NAME}.{secrets.token_hex(6)}"
        out = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=fd,
        )
        with os.fdopen(out, "wb") as f:
            f.write(data)
        try:
            os.replace(temp, NAME, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:  # a folder the code made in its place: the session is not kept
            os.unlink(temp, dir_fd=fd)
            raise
    finally:
        os.close(fd)
