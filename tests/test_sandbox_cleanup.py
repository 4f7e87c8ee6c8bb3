"""Cleanup the code cannot defeat, the folder given back as it was, and the terminal (issue 11,
attacks 3, 5, 6).

Each hostile tree is made by real code in the real sandbox (as the sandbox's user), then removed on
the host.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from agentloop.sandbox import bubblewrap as sandbox
from agentloop.sandbox import cgroup, cleanup
from agentloop.terminal import Printer
from tests.conftest import TINY


def made_in_sandbox(code: str, folder: Path) -> None:
    r = sandbox.run(code, folder, timeout=20)
    assert r.exit_code == 0, r.stderr


# ---- issue 11, attack 3: a tree the host's cleanup cannot remove ---------------------------------


def test_a_3000_deep_tree_is_removed(folder):
    made_in_sandbox(
        """
import os
for _ in range(3000):
    os.mkdir('a'); os.chdir('a')
open('bottom', 'w').write('x')
""",
        folder,
    )
    with pytest.raises(RecursionError):  # the attack: what the demo server used to do
        shutil.rmtree(folder, ignore_errors=True)
    cleanup.remove_tree(folder)
    assert not folder.exists()


def test_agentloop_run_leaves_no_folder_unless_kept(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    base = [
        sys.executable,
        "-m",
        "agentloop",
        "run",
        "--max-steps",
        "1",
        "--max-tokens",
        "4",
        "--no-tools",
        "--model",
        str(TINY["qwen3_5"]),
        "Hi",
    ]
    gone = subprocess.run(base, capture_output=True, text=True, env=env, timeout=300)
    assert "-- step 1" in gone.stdout, gone.stderr
    assert list(tmp_path.glob("agentloop-conversation-*")) == []
    kept = subprocess.run([*base, "--keep"], capture_output=True, text=True, env=env, timeout=300)
    [folder] = tmp_path.glob("agentloop-kept-*")  # not named for the process: no sweep takes it
    assert f"The conversation's folder is kept: {folder}" in kept.stderr


# ---- more hostile trees --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "what, code",
    [
        ("fifo", "os.mkfifo('pipe')"),
        ("socket", "import socket; socket.socket(socket.AF_UNIX).bind('sock')"),
        (
            "unreadable folder",
            "os.makedirs('locked/inner'); open('locked/inner/f', 'w'); os.chmod('locked', 0)",
        ),
        ("unwritable folder", "os.mkdir('ro'); open('ro/f', 'w'); os.chmod('ro', 0o500)"),
        ("no modes at all", "open('f', 'w'); os.chmod('f', 0); os.mkdir('d'); os.chmod('d', 0)"),
        (
            "sticky set-id",
            "os.mkdir('s'); os.chmod('s', 0o7777); open('s/f', 'w'); os.chmod('s/f', 0o7777)",
        ),
        (
            "newline names",
            "os.mkdir('a\\nb'); open('a\\nb/\\n', 'w'); open('-rf', 'w'); open(' ', 'w')",
        ),
        ("wide", "[open(f'f{i}', 'w').close() for i in range(3000)]"),
        (
            "deep and unreadable",
            "import os\nfor _ in range(500): os.mkdir('x'); os.chdir('x')\n"
            "os.chdir('/data'); os.chmod('x', 0)",
        ),
    ],
)
def test_hostile_trees_are_removed(folder, what, code):
    made_in_sandbox("import os\n" + code, folder)
    cleanup.remove_tree(folder)
    assert not os.path.lexists(folder)


def test_links_out_of_the_folder_are_removed_not_followed(folder, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the host's")
    (folder / "link").symlink_to(
        outside
    )  # as if a host tool had placed it; the code makes its own too
    made_in_sandbox("import os; os.symlink('/usr', 'usr'); os.symlink('../..', 'up')", folder)
    cleanup.remove_tree(folder)
    assert not folder.exists() and (outside / "keep.txt").read_text() == "the host's"
    assert Path("/usr/bin").is_dir()


def test_measure_sees_into_folders_the_code_locked(folder):
    made_in_sandbox(
        "import os\nos.mkdir('l')\nopen('l/f', 'wb').write(bytes(1 << 20))\nos.chmod('l', 0)",
        folder,
    )
    used, entries = cleanup.measure(folder)
    assert used >= 1 << 20 and entries == 3


def test_sweep_removes_only_what_dead_processes_left(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    theirs = tmp_path / f"agentloop-run-{dead.pid}-{uuid.uuid4().hex[:6]}"
    mine = tmp_path / f"agentloop-run-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    other = tmp_path / f"unrelated-{dead.pid}-x"
    for f in (theirs, mine, other):
        (f / "deep").mkdir(parents=True)
    removed = cleanup.sweep(tmp_path)
    assert theirs in removed and not theirs.exists() and mine.exists() and other.exists()


def test_the_demo_server_sweeps_at_start(tmp_path):
    from demo_server.app import create_app

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(tempfile.gettempdir()) / f"agentloop-run-{dead.pid}-{uuid.uuid4().hex[:6]}"
    stale.mkdir()
    os.mkfifo(stale / "fifo")
    create_app(model="tiny-nothing", site_dir=tmp_path, port=8000)  # no model: nothing loads
    assert not stale.exists()


# ---- issue 11, attack 5: as root, the folder lent to nobody --------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the folder is lent to nobody")
def test_chmod_of_data_does_not_stay_on_the_host(folder):
    folder.chmod(0o750)
    made_in_sandbox("import os; os.chmod('/data', 0o7777)", folder)
    st = folder.stat()
    assert stat.S_IMODE(st.st_mode) == 0o750 and (st.st_uid, st.st_gid) == (0, 0)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the folder is lent to nobody")
def test_a_runner_killed_with_minus_9_leaves_nothing_the_next_start_keeps(folder):
    runner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from agentloop import sandbox; sandbox.run('import time; time.sleep(60)', "
            "Path(sys.argv[1]), timeout=60)",
            str(folder),
        ]
    )
    stages = Path(tempfile.gettempdir()).glob
    for _ in range(300):
        if folder.stat().st_uid == sandbox.NOBODY and list(
            stages(f"agentloop-sandbox-{runner.pid}-*")
        ):
            break
        time.sleep(0.05)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    assert (
        folder.stat().st_uid == sandbox.NOBODY
    )  # the attack: left lent, with a stage folder beside it
    [stage] = stages(f"agentloop-sandbox-{runner.pid}-*")
    removed = cleanup.sweep()
    assert stage in removed and not stage.exists()
    assert not list(Path(cgroup.ROOT).glob(f"*/{cgroup.PARENT}/run-{runner.pid}-*"))
    sandbox.run(
        "pass", folder
    )  # the next run gives the folder to the owner of the folder around it
    assert folder.stat().st_uid == folder.parent.stat().st_uid == 0


# ---- issue 11, attack 6: the terminal ------------------------------------------------------------


def test_the_printer_shows_escape_sequences_escaped(folder, capsys):
    payload = uuid.uuid4().hex  # what the code would put on the clipboard, made now
    r = sandbox.run(
        f"import base64; p = base64.b64encode({payload.encode()!r}).decode()\n"
        "print(f'\\x1b]52;c;{p}\\x07 \\x1b]0;owned\\x07 \\x1b[2J \\x9b31m \\r done')",
        folder,
    )
    assert "\x1b]52;c;" in r.stdout  # the sandbox passes it on as text: the printer must not
    printer = Printer()
    printer.show(
        {"type": "tool_result", "call_id": "c1", "output": r.stdout, "is_error": False, "ms": 1}
    )
    printer.show({"type": "token", "text": "\x1b]0;title from the model\x07"})
    printer.line("")
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x9b\r"), repr(out)
    assert "\\u001b]52;c;" in out and "\\u001b]0;title from the model\\u0007" in out
