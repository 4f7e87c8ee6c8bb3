"""The tools: their schemas, argument validation, and each tool end to end (run_python with the real sandbox)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from agentloop import tools
from agentloop.harnesses.settings import RunSettings
from agentloop.sandbox import bubblewrap as sandbox
from agentloop.tools import DEFAULT_TOOLS, TOOLS, ToolOutput, select, validate


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A host file outside the folder."""
    s = tmp_path / "secret.txt"
    s.write_text("host secret")
    return s


def call(name: str, args: dict, folder: Path) -> ToolOutput:
    assert validate(TOOLS[name], args) is None
    return TOOLS[name].run(args, folder)


# ---- schemas and the registry -------------------------------------------------------------------------------


def test_default_tools_are_registered():
    # run_python alone: the tool the embedded default model was trained to call; RunSettings starts from it.
    assert DEFAULT_TOOLS == ("run_python",) == RunSettings().tools
    assert set(DEFAULT_TOOLS) <= set(TOOLS) and list(TOOLS) == [
        "run_python",
        "list_files",
        "read_file",
    ]


@pytest.mark.parametrize("name", list(TOOLS))
def test_schema_is_the_chat_template_function_format(name):
    tool = TOOLS[name]
    s = tool.schema()
    assert s == {
        "type": "function",
        "function": {"name": name, "description": tool.description, "parameters": tool.parameters},
    }
    Draft202012Validator.check_schema(tool.parameters)
    assert tool.parameters["type"] == "object"
    assert 0 < len(tool.description) < 400


def test_tool_is_frozen():
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        TOOLS["read_file"].name = "other"


def test_select_keeps_order_and_rejects_unknown_names():
    assert list(select(["read_file", "run_python"])) == ["read_file", "run_python"]
    with pytest.raises(ValueError, match="unknown tool 'rm_rf'"):
        select(["run_python", "rm_rf"])


def test_timeout_comes_from_the_environment():
    code = "from agentloop import tools; print(tools.RUN_PYTHON_TIMEOUT, 'after 2.5 seconds' in tools.TOOLS['run_python'].description)"
    env = {**os.environ, "AGENTLOOP_SANDBOX_TIMEOUT": "2.5"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out == "2.5 True\n"
    assert tools.RUN_PYTHON_TIMEOUT == sandbox.DEFAULT_TIMEOUT == 10.0


# ---- validation ---------------------------------------------------------------------------------------------


def test_valid_arguments():
    assert validate(TOOLS["run_python"], {"code": "print(1)"}) is None
    assert validate(TOOLS["list_files"], {}) is None
    assert validate(TOOLS["list_files"], {"path": "sub"}) is None


def test_missing_argument():
    assert validate(TOOLS["run_python"], {}) == "run_python needs the argument 'code'."
    assert validate(TOOLS["read_file"], {}) == "read_file needs the argument 'path'."


def test_extra_argument():
    msg = validate(TOOLS["run_python"], {"code": "1", "language": "python"})
    assert msg == "run_python has no argument 'language'; its arguments are: code."


def test_wrong_type():
    assert (
        validate(TOOLS["run_python"], {"code": 42})
        == "The argument 'code' of run_python must be a string, not an integer."
    )
    assert (
        validate(TOOLS["read_file"], {"path": ["a"]})
        == "The argument 'path' of read_file must be a string, not an array."
    )
    assert (
        validate(TOOLS["read_file"], {"path": None})
        == "The argument 'path' of read_file must be a string, not null."
    )


def test_arguments_not_an_object():
    assert (
        validate(TOOLS["run_python"], ["print(1)"])
        == "The arguments of run_python must be a JSON object, not an array."
    )
    assert (
        validate(TOOLS["run_python"], "print(1)")
        == "The arguments of run_python must be a JSON object, not a string."
    )


# ---- run_python ---------------------------------------------------------------------------------------------


def test_run_python_prints(folder):
    out = call("run_python", {"code": "print(6 * 7)"}, folder)
    assert out == ToolOutput("42", is_error=False)


def test_run_python_no_output(folder):
    assert call("run_python", {"code": "x = 1"}, folder) == ToolOutput(
        "(no output)", is_error=False
    )


def test_run_python_error_shows_stdout_stderr_and_exit_code(folder):
    out = call("run_python", {"code": "print('before')\n1 / 0"}, folder)
    assert out.is_error
    assert out.output.startswith("before\nTraceback")
    assert "ZeroDivisionError: division by zero" in out.output
    assert out.output.endswith("\nexit code 1")


def test_run_python_files_persist_between_calls(folder):
    call("run_python", {"code": "open('n.txt', 'w').write('7')"}, folder)
    assert call("run_python", {"code": "print(open('/data/n.txt').read())"}, folder).output == "7"
    assert (folder / "n.txt").read_text() == "7"


def test_run_python_timeout_is_reported(folder, monkeypatch):
    monkeypatch.setattr(tools, "RUN_PYTHON_TIMEOUT", 1.0)
    out = call("run_python", {"code": "import time; print('start'); time.sleep(30)"}, folder)
    assert out.is_error
    assert out.output == "start\nKilled after the 1 s wall-clock limit."


def test_run_python_memory_limit_is_reported(folder):
    out = call("run_python", {"code": "x = bytearray(4 << 30)"}, folder)
    assert out.is_error and out.output.endswith("MemoryError\nexit code 1\nMemory limit reached.")


def test_run_python_without_bwrap_says_how_to_install(folder, monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, *a, **k: None)
    out = call("run_python", {"code": "open('/data/ran', 'w')"}, folder)
    assert out.is_error
    assert (
        "sudo apt-get install bubblewrap" in out.output
        and "never runs code outside a sandbox" in out.output
    )
    assert not (folder / "ran").exists()


# ---- list_files ---------------------------------------------------------------------------------------------


def test_list_files(folder, secret):
    (folder / "b.csv").write_text("1,2\n")
    (folder / "a.txt").write_text("hello")
    (folder / "sub").mkdir()
    (folder / "link").symlink_to(secret)
    out = call("list_files", {}, folder)
    assert out == ToolOutput("a.txt  5 bytes\nb.csv  4 bytes\nlink (link)\nsub/", is_error=False)


def test_list_files_empty_and_subfolder(folder):
    assert call("list_files", {}, folder).output == "(no files)"
    (folder / "sub").mkdir()
    (folder / "sub" / "x").write_text("xyz")
    assert call("list_files", {"path": "/data/sub"}, folder).output == "x  3 bytes"
    assert call("list_files", {"path": "sub"}, folder).output == "x  3 bytes"


@pytest.mark.parametrize("path", ["/", "/etc", "..", "/data/..", "sub/../.."])
def test_list_files_refuses_outside(folder, path):
    out = call("list_files", {"path": path}, folder)
    assert out.is_error and "outside /data" in out.output


def test_list_files_refuses_a_link_out(folder, tmp_path):
    (folder / "up").symlink_to(tmp_path)
    out = call("list_files", {"path": "up"}, folder)
    assert out.is_error and "goes through a link" in out.output


def test_list_files_missing_folder(folder):
    out = call("list_files", {"path": "nope"}, folder)
    assert out == ToolOutput("There is no folder nope in /data.", is_error=True)


# ---- read_file ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["notes.txt", "/data/notes.txt", "./notes.txt", "sub/../notes.txt"]
)
def test_read_file(folder, path):
    (folder / "notes.txt").write_text("dear diary\n")
    (folder / "sub").mkdir()
    assert call("read_file", {"path": path}, folder) == ToolOutput("dear diary\n", is_error=False)


def test_read_file_written_by_run_python(folder):
    call("run_python", {"code": "open('/data/result.txt', 'w').write('from the sandbox')"}, folder)
    assert call("read_file", {"path": "result.txt"}, folder).output == "from the sandbox"


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "/etc/shadow", "../secret.txt", "/data/../secret.txt", "/data2/x"]
)
def test_read_file_refuses_outside(folder, secret, path):
    out = call("read_file", {"path": path}, folder)
    assert out.is_error and "outside /data" in out.output
    assert "host secret" not in out.output


def test_read_file_refuses_a_link_out_placed_on_the_host(folder, secret):
    (folder / "escape").symlink_to(secret)
    out = call("read_file", {"path": "escape"}, folder)
    assert out.is_error and "a link" in out.output and "host secret" not in out.output


def test_read_file_refuses_a_link_out_made_by_the_model(folder, secret):
    call(
        "run_python",
        {
            "code": f"import os; os.symlink({str(secret)!r}, 'escape'); os.symlink('/etc/shadow', 'shadow')"
        },
        folder,
    )
    for name in ("escape", "shadow"):
        out = call("read_file", {"path": name}, folder)
        assert out.is_error and "a link" in out.output and "host secret" not in out.output


def test_read_file_follows_no_link_even_one_inside(folder):
    """A link that points inside today may be swapped for one that points out between a check and
    an open: host readers follow none, and say so (run_python can still read through it)."""
    (folder / "real.txt").write_text("real")
    (folder / "alias").symlink_to("real.txt")
    (folder / "sub").symlink_to(".")
    for path in ("alias", "sub/real.txt"):
        out = call("read_file", {"path": path}, folder)
        assert out.is_error and "host tools do not follow links" in out.output


def test_read_file_is_capped(folder):
    (folder / "big.txt").write_text("z" * (tools.READ_LIMIT + 10))
    out = call("read_file", {"path": "big.txt"}, folder)
    assert not out.is_error
    assert out.output.startswith("z" * tools.READ_LIMIT + "\n[… cut at")
    assert f"of {tools.READ_LIMIT + 10} bytes" in out.output


def test_read_file_missing_folder_binary_and_fifo(folder):
    assert call("read_file", {"path": "nope.txt"}, folder).is_error
    (folder / "sub").mkdir()
    assert "is a folder" in call("read_file", {"path": "sub"}, folder).output
    (folder / "b.bin").write_bytes(b"\x00\x01\x02")
    assert "binary file of 3 bytes" in call("read_file", {"path": "b.bin"}, folder).output
    os.mkfifo(folder / "pipe")  # would block a plain open() forever
    out = call("read_file", {"path": "pipe"}, folder)
    assert out == ToolOutput("pipe is not a regular file.", is_error=True)
