"""pi in RPC mode as a child process, and its protocol: commands on stdin and records on stdout, one
JSON object a line, each command's response matched to it by id.

Left out: what the records mean to a run (harness.py) and how pi is started (command.py)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path


class PiFailed(RuntimeError):
    """pi ended, hung or refused a command in the middle of a run."""


class PiProcess:
    """pi in RPC mode as a child process: commands on stdin, records on stdout (one JSON object a
    line), responses matched to their commands by id, since they can come back out of order."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]):
        # Its own process group, so closing ends pi and everything it started (a tool's Python, a
        # shell).
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._records: queue.Queue = queue.Queue()
        self._responses: dict[str, dict] = {}
        self._stderr: list[bytes] = []
        self._held: list[dict] = []  # records read while waiting for a command's response, in order
        self._ids = 0
        threading.Thread(target=self._read, daemon=True, name="pi-stdout").start()
        threading.Thread(target=self._read_stderr, daemon=True, name="pi-stderr").start()

    def send(self, kind: str, **fields) -> str:
        self._ids += 1
        command_id = f"agentloop-{self._ids}"
        self._write({"id": command_id, "type": kind, **fields})
        return command_id

    def command(self, kind: str, timeout: float = 30.0, **fields) -> dict:
        """Send a command and wait for its own response (others that arrive meanwhile are kept for
        theirs)."""
        command_id = self.send(kind, **fields)
        deadline = time.monotonic() + timeout
        while command_id not in self._responses:
            if time.monotonic() > deadline:
                raise PiFailed(f"no answer to {kind} within {timeout:.0f} s")
            record = self.next_record(timeout=0.1, keep_others=True)
            if record is not None:
                self._held.append(record)
        response = self._responses.pop(command_id)
        if not response.get("success"):
            raise PiFailed(f"{kind} was refused: {response.get('error')}")
        return response.get("data") or {}

    def next_record(self, timeout: float, keep_others: bool = False) -> dict | None:
        """The next record that is not a response (responses are filed by id). Raises PiFailed if pi
        ended."""
        if not keep_others and self._held:
            return self._held.pop(0)
        try:
            record = self._records.get(timeout=timeout)
        except queue.Empty:
            return None
        if record is None:
            code = self.proc.wait()
            tail = b"".join(self._stderr).decode(errors="replace").strip()[-500:]
            raise PiFailed(f"pi ended unexpectedly (exit code {code}){': ' + tail if tail else ''}")
        if record.get("type") == "response":
            self._responses[record.get("id")] = record
            return None
        return record

    def respond(self, ui_id: str, **answer) -> None:
        self._write({"type": "extension_ui_response", "id": ui_id, **answer})

    def close(self) -> None:
        """Close stdin (pi then exits by itself), and end the whole process group whatever state it
        is in."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(
                self.proc.pid, signal.SIGKILL
            )  # pi's children too, even when pi itself has exited
        except ProcessLookupError:
            pass
        self.proc.wait()

    def _write(self, record: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(record).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise PiFailed("pi is not running") from None

    def _read(self) -> None:
        # Records end at LF only (a JSON string may hold U+2028); a binary stream splits on nothing
        # else.
        for line in self.proc.stdout:
            line = line.strip()
            if line:
                try:
                    self._records.put(json.loads(line))
                except json.JSONDecodeError:
                    self._stderr.append(b"(not JSON on stdout) " + line[:200] + b"\n")
        self._records.put(None)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-50]
