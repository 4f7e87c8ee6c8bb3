"""The tools the model may call: for each a name, a description, a JSON Schema of its arguments, and a function.

Every tool works on the conversation's folder, which run_python's code sees as /data, so the model names files
the same way in every tool: "data.csv" or "/data/data.csv". The descriptions are written for a small model:
short and plain. A tool never raises for a bad call: it returns a ToolOutput with is_error set, in words the
model can act on, and the loop shows it to the model as the tool's result.

What it leaves out: tools that write files (run_python does that), and any tool that reaches the network.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from agentloop import sandbox
from agentloop.sandbox import data_folder

# Seconds of wall clock a run_python call may take; AGENTLOOP_SANDBOX_TIMEOUT changes it.
RUN_PYTHON_TIMEOUT = float(os.environ.get("AGENTLOOP_SANDBOX_TIMEOUT", sandbox.DEFAULT_TIMEOUT))
READ_LIMIT = 64 << 10  # bytes of a file that read_file returns
LIST_LIMIT = 500  # names list_files shows of one folder (the quota allows 10,000)


@dataclass
class ToolOutput:
    output: str  # what the model reads as the tool's result
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict  # JSON Schema of the arguments, an object
    run: Callable[[dict, Path], ToolOutput]  # (arguments, the conversation's folder) -> output

    def schema(self) -> dict:
        """The tool as Hugging Face chat templates take it (`tools=[...]`), the OpenAI function format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


# ---- run_python ---------------------------------------------------------------------------------------------


def run_python(args: dict, folder: Path) -> ToolOutput:
    """Run the code in the sandbox; the model reads stdout, then stderr, then how it ended if not well."""
    try:
        r = sandbox.run(args["code"], folder, timeout=RUN_PYTHON_TIMEOUT)
    except sandbox.SandboxUnavailable as e:
        return ToolOutput(str(e), is_error=True)  # nothing ran: say so, and how to fix it
    parts = [r.stdout, r.stderr]
    if r.exit_code not in (0, None):
        parts.append(f"exit code {r.exit_code}")
    if r.reason:
        parts.append(r.reason[0].upper() + r.reason[1:] + ".")
    text = "\n".join(p.rstrip("\n") for p in parts if p)
    return ToolOutput(text or "(no output)", is_error=r.timed_out or r.exit_code != 0)


# ---- the folder, named as the sandbox names it --------------------------------------------------------------
# What run_python's code left in /data is hostile to the host: both tools open it through data_folder, which
# follows no link, waits on no FIFO and reads nothing but regular files and folders inside it.


def list_files(args: dict, folder: Path) -> ToolOutput:
    """Names and sizes in /data (or a folder inside it): folders end with /, anything else is marked,
    and every name is shown escaped, so a name with a newline cannot forge a line."""
    path = args.get("path", "/data")
    try:
        fd = data_folder.open_folder(folder, path)
    except data_folder.Refused as e:
        return ToolOutput(str(e), is_error=True)
    try:
        entries = sorted(os.scandir(fd), key=lambda e: e.name)
        lines = [f"{data_folder.shown(e.name)}{kind_and_size(e)}" for e in entries[:LIST_LIMIT]]
    finally:
        os.close(fd)
    if len(entries) > LIST_LIMIT:
        lines.append(f"[… and {len(entries) - LIST_LIMIT} more: list them with run_python …]")
    return ToolOutput("\n".join(lines) if lines else "(no files)")


def kind_and_size(entry: os.DirEntry) -> str:
    """What follows a name in the listing, from the entry itself (lstat: no link is followed)."""
    info = entry.stat(follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        return "/"
    if stat.S_ISREG(info.st_mode):
        return f"  {info.st_size} bytes"
    if stat.S_ISLNK(info.st_mode):
        return " (link)"
    return " (not a regular file)"  # a FIFO, a socket


def read_file(args: dict, folder: Path) -> ToolOutput:
    """The text of a file in /data, its first READ_LIMIT bytes if longer."""
    path = args["path"]
    try:
        fd = data_folder.open_file(folder, path)
    except data_folder.Refused as e:
        return ToolOutput(str(e), is_error=True)
    try:
        size = os.fstat(fd).st_size
        data = os.read(
            fd, READ_LIMIT
        )  # a regular file: one read returns all asked, or up to the end
    finally:
        os.close(fd)
    if b"\0" in data:
        return ToolOutput(
            f"{path} is a binary file of {size} bytes: read it with run_python.", is_error=True
        )
    text = data.decode("utf-8", errors="replace")
    if size > READ_LIMIT:
        text += f"\n[… cut at {READ_LIMIT} of {size} bytes: read the rest with run_python …]"
    return ToolOutput(text)


# ---- the registry -------------------------------------------------------------------------------------------


def _object(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in [
        Tool(
            name="run_python",
            description=(
                f"Run Python code and see what it prints. Use print() to show results. The files are in "
                f"/data, the current folder: save new files there too. Each run starts fresh: variables "
                f"are not kept, files are. No internet. A run is stopped after {RUN_PYTHON_TIMEOUT:g} seconds."
            ),
            parameters=_object(
                {"code": {"type": "string", "description": "The Python code to run."}}, ["code"]
            ),
            run=run_python,
        ),
        Tool(
            name="list_files",
            description="List the files in /data, the folder of this conversation, with their sizes.",
            parameters=_object(
                {"path": {"type": "string", "description": "A folder in /data. Default: /data."}},
                [],
            ),
            run=list_files,
        ),
        Tool(
            name="read_file",
            description="Read a text file in /data and show what it says.",
            parameters=_object(
                {
                    "path": {
                        "type": "string",
                        "description": "The file, like notes.txt or /data/notes.txt.",
                    }
                },
                ["path"],
            ),
            run=read_file,
        ),
    ]
}

# The tools a run gives the model unless told otherwise: run_python alone, the one the embedded default model was
# trained to call (list_files and read_file are a setting away).
DEFAULT_TOOLS = ("run_python",)


def select(names: Iterable[str]) -> dict[str, Tool]:
    """The tools named, in that order. ValueError on a name that is not a tool."""
    names = list(names)
    for name in names:
        if name not in TOOLS:
            raise ValueError(f"unknown tool {name!r}; the tools are: {', '.join(TOOLS)}")
    return {name: TOOLS[name] for name in names}


# ---- checking a call's arguments ----------------------------------------------------------------------------

_JSON_TYPES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}
_ARTICLES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def validate(tool: Tool, args) -> str | None:
    """None when `args` fit the tool's JSON Schema (Draft 2020-12), else one sentence naming the bad field."""
    if not isinstance(args, dict):
        return f"The arguments of {tool.name} must be a JSON object, not {_JSON_TYPES.get(type(args), 'that')}."
    error = best_match(Draft202012Validator(tool.parameters).iter_errors(args))
    if error is None:
        return None
    known = ", ".join(tool.parameters.get("properties", {})) or "none"
    field = ".".join(str(p) for p in error.path)
    if error.validator == "required":
        missing = next(name for name in error.validator_value if name not in error.instance)
        return f"{tool.name} needs the argument '{missing}'."
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(tool.parameters.get("properties", {})))
        return f"{tool.name} has no argument '{extra[0]}'; its arguments are: {known}."
    if error.validator == "type" and field:
        wanted = (
            error.validator_value
            if isinstance(error.validator_value, str)
            else error.validator_value[0]
        )
        got = _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
        return f"The argument '{field}' of {tool.name} must be {_ARTICLES.get(wanted, wanted)}, not {got}."
    return f"The argument '{field or '(all)'}' of {tool.name} is not valid: {error.message}."
