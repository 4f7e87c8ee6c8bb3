"""The sandbox's boundary is /data itself (issue 40): nothing the model's code leaves there reaches host
code. Each attack the issue found is tried here on the real parts (the demo server, pi, bubblewrap);
the rest of the same families beside it. The model's calls are forced (the server's testing aid), so
each run writes exactly the attack; markers are made when the test runs, on the host, never in the
code sent in, so an echo of the code cannot pass for a leak.

Elsewhere: the quota and socket buffers in test_sandbox_memory.py; the model endpoint's connections
in test_pi.py; what an upload may cost in test_media_server.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from agentloop import tools
from agentloop.sandbox import bubblewrap as sandbox
from agentloop.sandbox import cleanup, data_folder
from demo_server.client import Client
from tests import media_files
from tests.conftest import agent_client, demo_server
from tests.test_media_server import attached
from tests.test_server import run_through

SETTINGS = {"temperature": 0, "max_new_tokens": 4000, "max_steps": 4}


def call(name: str, **args: str) -> str:
    """A tool call as Qwen3.5 writes it, to force as one step's whole output."""
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call><|im_end|>"


DONE = "Done.<|im_end|>"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with agent_client(tmp_path_factory, allow_forced=True) as client:
        yield client


def results(evs: list[dict]) -> list[dict]:
    return [e for e in evs if e["type"] == "tool_result"]


# ---- 1. a package named like ours, planted in /data, imported by pi's tool runner ------------------


def modules_the_tool_runner_imports(folder: Path) -> list[str]:
    """Every top-level module `python -I -m agentloop tool` imports, as pi's extension runs it."""
    done = subprocess.run(
        [sys.executable, "-I", "-X", "importtime", "-m", "agentloop", "tool", "list_files"]
        + ["--folder", str(folder), "--args", "{}"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[-1].strip() for line in done.stderr.splitlines()[1:] if "|" in line]
    names = {row.split(".")[0] for row in rows} | {"agentloop", "sitecustomize", "usercustomize"}
    return sorted(n for n in names if n.isidentifier())


def test_a_package_planted_in_data_never_runs_in_pis_tool_runner(server, tmp_path, home):
    """On main, pi ran each tool as `python -m agentloop tool` in the conversation's folder: an
    `agentloop` package saved there by run_python was imported at the next tool call and ran as
    the server's user. Planted here: a package named like every module the tool runner imports."""
    marker = tmp_path / f"ran-{uuid.uuid4().hex}"
    names = modules_the_tool_runner_imports(tmp_path)
    assert "agentloop" in names and "json" in names and len(names) > 50
    payload = f"open({str(marker)!r}, 'a').write(__name__ + chr(10))\n"
    plant = (
        "import os\n"
        f"P = {payload!r}\n"
        f"for n in {' '.join(names)!r}.split():\n"
        "    os.makedirs(n, exist_ok=True); open(n + '/__init__.py', 'w').write(P)\n"
        "print('planted')\n"
    )
    forced = [call("run_python", code=plant), call("list_files", path="/data"), DONE]
    settings = {
        **SETTINGS,
        "harness": "pi",
        "pi_tools": "book",
        "tools": ["run_python", "list_files"],
    }
    run_id = server.start_run("Plant them.", settings, forced)
    evs = run_through(server, run_id, approve=True)
    planted, listed = results(evs)
    assert planted["output"].strip() == "planted" and not planted["is_error"]
    assert not listed["is_error"] and "agentloop/" in listed["output"].splitlines()
    assert not marker.exists(), f"host code imported from /data: {marker.read_text()[:200]}"
    assert evs[-1]["stop_reason"] == "final"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """pi is started with a HOME of the test's own (it never reads the user's ~/.pi)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


# ---- 2. media the host decodes, from what the code left in /data ----------------------------------------


def test_a_link_in_place_of_an_attachment_never_reaches_the_prompt(server, tmp_path):
    """On main, each step decoded the attachment from /data again: replaced there by run_python with a link
    to a root-only image elsewhere on the host, the next step put that image in the prompt (media tokens
    64 → 70). The host decodes its own copy now, outside /data."""
    marker = tmp_path / f"marker-{uuid.uuid4().hex}.png"
    marker.write_bytes(media_files.image(640, 480))  # 300 tokens on Qwen3.5: more than the photo's
    marker.chmod(0o600)
    swap = f"import os\nos.symlink({str(marker)!r}, 'link')\nos.replace('link', 'photo.png')\n"
    evs = run_attached(server, [call("run_python", code=swap + "print('swapped')"), DONE])
    first, second = [e for e in evs if e["type"] == "context"]
    assert results(evs)[0]["output"].strip() == "swapped"
    assert second["media_tokens"] == first["media_tokens"] != {"image": 300}
    assert evs[-1]["stop_reason"] == "final"


def test_a_fifo_in_place_of_an_attachment_holds_nothing(server):
    """On main, a FIFO in place of an attachment blocked the next step in open() for ever, holding the
    model: every later run was refused (409), Stop did nothing, and only a restart helped."""
    make = "import os\nos.remove('photo.png')\nos.mkfifo('photo.png')\nprint('fifo')"
    evs = run_attached(server, [call("run_python", code=make), DONE])
    assert results(evs)[0]["output"].strip() == "fifo" and evs[-1]["stop_reason"] == "final"
    again = server.start_run("Hi.", {**SETTINGS, "use_tools": False, "max_new_tokens": 2})
    assert run_through(server, again)[-1]["type"] == "run_end"


def run_attached(server, forced: list[str], wait_s: float = 120) -> list[dict]:
    """A run with a photo attached, forced as `forced`, its calls approved: its events once it has ended,
    or a failure when it has not ended within `wait_s` (on main, one never did)."""
    photo = attached("photo.png", media_files.image(200, 150))
    settings = {**SETTINGS, "tools": ["run_python"]}
    run_id = server.start_run("Look.", settings, forced, attachments=[photo])
    evs: list[dict] = []
    reading = threading.Thread(target=lambda: evs.extend(run_through(server, run_id, True)))
    reading.daemon = True  # on main it would wait for ever
    reading.start()
    reading.join(wait_s)
    assert not reading.is_alive(), (
        f"the run has not ended in {wait_s} s: {[e['type'] for e in evs]}"
    )
    return evs


def test_a_full_data_refuses_a_follow_ups_attachments_in_both_languages(server):
    """/data's quota is the kernel's: run_python filled its inodes. Saving a follow-up's attachment then
    failed with ENOSPC, which on main was a 500; it is a refusal the reader can act on, and nothing of
    the follow-up is kept."""
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    fill = (
        "import os\nn = 0\ntry:\n    while True:\n        os.close(os.open(f'f{n}', os.O_CREAT)); n += 1\n"
        "except OSError as e:\n    print(e.strerror)"
    )
    body = {"question": "Fill it.", "settings": {**SETTINGS, "tools": ["run_python"]}}
    r = server.post("/api/runs", {**body, "forced": [call("run_python", code=fill), DONE]})
    evs = run_through(server, r.json()["run_id"], approve=True)
    assert results(evs)[0]["output"].strip() == "No space left on device"
    conversation = r.json()["conversation_id"]
    photo = attached("photo.png", media_files.image(200, 150))
    follow_up = {**body, "conversation_id": conversation, "attachments": [photo]}
    refused = server.post("/api/runs", follow_up)
    assert refused.status_code == 400, refused.text
    message = refused.json()["message"]
    assert "/data is full" in message["en"] and "/data 已滿" in message["zh"]
    assert server.status()["busy"] is False


# ---- 8. a refused request leaves nothing -------------------------------------------------------------


@pytest.mark.parametrize("refusal", ["an unknown conversation", "a bad attachment"])
def test_a_refused_request_leaves_no_forced_text_for_the_next_run(server, refusal):
    """On main, start_run queued `forced` before it looked the conversation up: a request refused with
    404 left its text for whoever ran next, which then wrote it as its own."""
    marker = f"Forced {uuid.uuid4().hex}.<|im_end|>"
    body = {"question": "Hi.", "settings": {**SETTINGS, "use_tools": False}, "forced": [marker]}
    if refusal == "an unknown conversation":
        body["conversation_id"], status = uuid.uuid4().hex[:12], 404
    else:
        body["attachments"], status = [attached("cut.png", media_files.truncated_png())], 400
    assert server.post("/api/runs", body).status_code == status
    settings = {**SETTINGS, "use_tools": False, "max_new_tokens": 8}
    evs = run_through(server, server.start_run("Say hi.", settings))
    assert not any(e.get("forced") for e in evs if e["type"] == "token")
    assert marker[:20] not in next(e for e in evs if e["type"] == "model_end")["raw"]


# ---- 9. names and /proc ------------------------------------------------------------------------------


def test_a_name_with_a_newline_cannot_forge_a_line_of_the_listing(server):
    """On main, list_files gave the model raw names: 'a\\nsecret.txt  9 bytes' read as two files."""
    make = "open('note\\nforged.txt  99 bytes', 'w').write('x'); open('\\x1b[2Jclear', 'w')"
    forced = [call("run_python", code=make), call("list_files", path="/data"), DONE]
    settings = {**SETTINGS, "tools": ["run_python", "list_files"]}
    evs = run_through(server, server.start_run("Make them.", settings, forced), approve=True)
    listing = results(evs)[1]["output"].splitlines()
    assert listing == ["\\x1b[2Jclear  0 bytes", "note\\nforged.txt  99 bytes  1 bytes"], listing


def test_proc_says_nothing_of_the_host_a_run_does_not_need(folder):
    """/proc/cmdline, the kernel's configuration, the boot id, the host's pressure and interrupts:
    each is covered; what the host itself reads there never shows inside."""
    host = {p: Path(p).read_bytes() for p in ("/proc/cmdline", "/proc/sys/kernel/random/boot_id")}
    r = sandbox.run(
        "import os\n"
        "for p in ['/proc/cmdline', '/proc/config.gz', '/proc/sys/kernel/random/boot_id',\n"
        "          '/proc/interrupts', '/proc/kallsyms', '/proc/iomem']:\n"
        "    try:\n"
        "        print(p, open(p, 'rb').read()[:200])\n"
        "    except OSError as e:\n"
        "        print(p, 'refused', e.strerror)\n"
        "for p in ['/proc/pressure', '/proc/acpi', '/proc/irq', '/proc/driver']:\n"
        "    print(p, os.listdir(p) if os.path.isdir(p) else 'absent')\n",
        folder,
    )
    for value in host.values():
        assert value.strip() and value.strip()[:40] not in r.stdout.encode(), r.stdout
    for line in r.stdout.splitlines():
        path, _, what = line.partition(" ")
        if path in sandbox.hidden_proc_here():
            assert what in ("refused Permission denied", "[]"), line
    assert "/proc/cmdline refused" in r.stdout and "/proc/pressure []" in r.stdout


# ---- more host-side readers of /data, and other kinds of file ----------------------------------------


def run_py(code: str, folder: Path) -> sandbox.SandboxResult:
    r = sandbox.run(code, folder)
    assert r.exit_code == 0, r.stdout + r.stderr
    return r


def test_read_file_refuses_a_socket_and_a_fifo_the_code_left(folder):
    run_py(
        "import os, socket\n"
        "socket.socket(socket.AF_UNIX).bind('sock'); os.mkfifo('pipe'); os.mkdir('sub')\n"
        "os.mkfifo('sub/pipe')",
        folder,
    )
    for path in ("sock", "pipe", "sub/../pipe", "/data/sub/pipe"):
        out = tools.read_file({"path": path}, folder)
        assert out.is_error and "not a regular file" in out.output, (path, out)
    listing = tools.list_files({}, folder).output.splitlines()
    assert listing == ["pipe (not a regular file)", "sock (not a regular file)", "sub/"]


def test_a_link_swapped_in_while_the_host_reads_never_leads_out(folder, tmp_path):
    """A race the code could run from a daemon in a future harness: a process swaps a folder and a
    link to a host folder back and forth under one name while read_file opens `sub/x` through it.
    On main, read_file resolved the path, checked it, then opened it: a link that came in between
    at `sub` was followed (O_NOFOLLOW guards only the last name), and the host's x was read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = f"host-{uuid.uuid4().hex}"
    (outside / "x").write_text(secret)
    (folder / "real").mkdir()
    (folder / "real" / "x").write_text("inside")
    swap = (
        "import os, sys\n"
        "os.chdir(sys.argv[1])\n"
        "while True:\n"
        "    os.rename('real', 'sub'); os.rename('sub', 'real')\n"
        "    os.symlink(sys.argv[2], 'sub'); os.unlink('sub')\n"
    )
    swapper = subprocess.Popen([sys.executable, "-c", swap, str(folder), str(outside)])
    seen: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 20
        while min(seen.get("inside", 0), seen.get("link", 0)) < 50 and time.monotonic() < deadline:
            out = tools.read_file({"path": "sub/x"}, folder).output
            assert secret not in out
            kind = "inside" if out == "inside" else "link" if "link" in out else "other"
            seen[kind] = seen.get(kind, 0) + 1
    finally:
        swapper.kill()
        swapper.wait()
    assert seen.get("inside", 0) >= 50 and seen.get("link", 0) >= 50, seen


def test_a_folder_linked_to_the_root_is_not_listed(folder):
    run_py("import os; os.symlink('/', 'root'); os.symlink('..', 'up')", folder)
    for path in ("root", "root/etc", "up", "up/up"):
        out = tools.list_files({"path": path}, folder)
        assert out.is_error and "link" in out.output, (path, out)


def test_no_hard_link_reaches_a_file_outside_data(folder):
    """A hard link is the same file under another name, and no link to follow: the kernel refuses one
    across mounts (EXDEV), and /data is a mount of its own."""
    r = run_py(
        "import os\n"
        "for src in ['/usr/bin/python3', '/tmp/main.py', '/proc/self/status']:\n"
        "    try:\n"
        "        os.link(src, 'x'); print('linked', src)\n"
        "    except OSError as e:\n"
        "        print('refused', e.strerror)",
        folder,
    )
    assert "linked" not in r.stdout and r.stdout.count("refused") == 3, r.stdout


def test_no_device_and_no_set_id_program_in_data(folder):
    r = run_py(
        "import os, shutil\n"
        "try:\n"
        "    os.mknod('null', 0o666 | 0o020000, os.makedev(1, 3)); print('made a device')\n"
        "except OSError as e:\n"
        "    print('mknod', e.strerror)\n"
        "shutil.copy('/usr/bin/python3', 'py'); os.chmod('py', 0o6755)\n"
        "print(oct(os.stat('py').st_mode), os.stat('py').st_uid)",
        folder,
    )
    assert "mknod Operation not permitted" in r.stdout, r.stdout
    mode, uid = r.stdout.splitlines()[1].split()
    assert uid == str(sandbox.NOBODY)  # set-id to nobody at most, on a nosuid mount
    if data_folder.kernel_quota(folder):
        assert "nosuid" in mount_options(folder) and "nodev" in mount_options(folder)


def mount_options(folder: Path) -> str:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if line.split(" ")[4] == str(folder):
            return line.split(" ")[5]
    return ""


def test_names_that_are_not_utf8_are_shown_escaped(folder):
    run_py("open(b'bad\\xff\\xfename', 'w').write('x')", folder)
    listing = tools.list_files({}, folder).output
    assert listing == "bad\\xff\\xfename  1 bytes"
    listing.encode("utf-8")  # the event carrying it is JSON: no lone surrogate reaches it


def test_the_listing_of_a_folder_full_of_names_is_bounded(folder):
    run_py("import os\nfor i in range(3000): os.close(os.open(f'f{i:05}', os.O_CREAT))", folder)
    out = tools.list_files({}, folder).output.splitlines()
    assert len(out) == tools.LIST_LIMIT + 1 and out[-1] == (
        f"[… and {3000 - tools.LIST_LIMIT} more: list them with run_python …]"
    )


def test_umount_of_data_is_refused_inside(folder):
    r = run_py(
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.umount2(b'/data', 2), os.strerror(ctypes.get_errno()))",
        folder,
    )
    assert r.stdout.strip() == "-1 Operation not permitted"


# ---- other limits the kernel holds during the call ---------------------------------------------------


def test_hard_links_and_extended_attributes_count_against_the_quota(tmp_path):
    """Each is kernel memory a tmpfs charges to its inode budget: neither outgrows the quota."""
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    folder = data_folder.create(8 << 20, 200, parent=tmp_path)
    try:
        r = run_py(
            "import os\n"
            "open('x', 'w').close(); n = 0\n"
            "try:\n"
            "    while n < 100_000: os.link('x', f'l{n}'); n += 1\n"
            "except OSError as e: print('links', n, e.strerror)\n"
            "n = 0\n"
            "try:\n"
            "    while n < 100_000: os.setxattr('x', f'user.k{n}', bytes(4000)); n += 1\n"
            "except OSError as e: print('xattrs', n, e.strerror)",
            folder,
        )
    finally:
        cleanup.remove_tree(folder)
    links, xattrs = (line.split(" ", 2) for line in r.stdout.splitlines())
    assert int(links[1]) < 200 and links[2] == "No space left on device", r.stdout
    assert int(xattrs[1]) * 4000 < 1 << 20 and xattrs[2] == "No space left on device", r.stdout


def test_files_in_data_count_against_the_sandboxs_memory(tmp_path):
    """/data is in memory: what the code writes there is charged to the run's cgroup like /tmp, so
    the quota and the memory limit hold together."""
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    folder = data_folder.create(256 << 20, 100, parent=tmp_path)
    try:
        r = sandbox.run(
            "total = 0\n"
            "for i in range(12):\n"
            "    open(f'f{i}', 'wb').write(bytes(16 << 20)); total += 16 << 20\n"
            "    print('held', total, flush=True)",
            folder,
            limits=sandbox.Limits(sandbox_memory_bytes=96 << 20),
        )
    finally:
        cleanup.remove_tree(folder)
    held = int(r.stdout.split()[-1]) if r.stdout else 0
    assert held < 96 << 20 and r.reason == "memory limit of the whole sandbox reached", r


def test_a_full_folder_is_removed_and_unmounted(tmp_path):
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    folder = data_folder.create(4 << 20, 300, parent=tmp_path)
    run_py(
        "import os\nfor i in range(3000):\n try: os.mkdir(f'd{i}')\n except OSError: break", folder
    )
    cleanup.remove_tree(folder)
    assert not folder.exists() and not data_folder.is_our_mount(folder)


def test_the_sweep_unmounts_the_folders_of_a_server_killed_with_minus_9(tmp_path):
    """A server killed mid-run leaves its conversations' tmpfs mounted; the next start's sweep
    removes what belonged to a process that is gone, mount and all."""
    assert os.geteuid() == 0, "the kernel's quota on /data needs root (as CI runs)"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from agentloop.sandbox import data_folder; "
            "print(data_folder.create(parent=sys.argv[1]), flush=True); time.sleep(60)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    folder = Path(child.stdout.readline().strip())
    assert data_folder.is_our_mount(folder)
    child.kill()
    child.wait()
    removed = cleanup.sweep(tmp_path)
    assert folder in removed and not folder.exists() and not data_folder.is_our_mount(folder)


# ---- holding the server's threads: the demo server's own connections ------------------------------


def test_idle_connections_cannot_starve_the_demo_server(server):
    """The attack on the model endpoint (test_model_endpoint.py), against the demo server's own
    uvicorn: sockets that send half a request line and wait. On main all 300 stayed open, each a
    file descriptor of the server's; now no more than MAX_CONNECTIONS do (the oldest waiting are cut
    off first), and the server answers meanwhile. The time limit on each is guarded_http's, tested
    with short limits on the endpoint."""
    import socket

    from demo_server.server import MAX_CONNECTIONS

    host, port = server.url.split("//")[1].split(":")
    idle = []
    for _ in range(300):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"GET /api/status HTTP/1.1\r\n")  # and never the rest
        idle.append(s)
    try:
        assert server.get("/api/status").status_code == 200
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            still_open = [s for s in idle if not closed(s)]
            if len(still_open) <= MAX_CONNECTIONS:
                break
            time.sleep(0.2)
        assert len(still_open) <= MAX_CONNECTIONS, f"{len(still_open)} idle connections open"
        assert server.get("/api/status").status_code == 200
    finally:
        for s in idle:
            s.close()


def closed(s) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1 << 16) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_a_stopped_server_leaves_no_conversation_folder_mounted(tmp_path):
    """Its conversations' folders are tmpfs mounts as root: they go when the server stops."""
    from tests.conftest import TINY

    with demo_server(tmp_path / "site", model=str(TINY["qwen3_5"]), device="cpu") as srv:
        client = Client(srv.url)
        run_id = client.start_run("Hi", {"max_new_tokens": 2, "use_tools": False})
        list(client.run_events(run_id))
        client.close()
        [conversation] = srv.app.state.current.conversations._kept.values()
        assert conversation.files.is_dir()
    assert not conversation.files.exists() and not data_folder.is_our_mount(conversation.files)
