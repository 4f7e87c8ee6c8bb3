"""Where pi's own tools run: each operation of pi's bash, read, write, edit, ls, find and grep, inside
the sandbox run_python uses (sandbox/bubblewrap.py), over the conversation's folder as /data (chapter 16).

pi's tools take pluggable operations (its docs/extensions.md, "Remote Execution"): the extension
(extension.ts) keeps each tool's definition as pi builds it, the description and the prompt lines the
model reads, and gives it operations that call `python -I -m agentloop pi-op`, which runs `run_op`
here. Every operation is a short Python program run by sandbox.run, with the sandbox's limits, so a
path the model names is looked up inside the sandbox: /data is the conversation's folder, / is the
sandbox's own root, and nothing of the host is there to read or write. Files go in and out as base64
on the program's stdout, so a binary file survives, within DATA_LIMIT.

Left out: images through pi's read (its image detection is not given: an image is read as bytes).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agentloop import sandbox
from agentloop.sandbox.bubblewrap import DEFAULT_LIMITS

# What a file read through pi may hold: the sandbox's output is capped, and base64 is 4/3 of the file.
DATA_LIMIT = 3 << 20
OP_LIMITS = replace(DEFAULT_LIMITS, output_bytes=(DATA_LIMIT * 4) // 3 + 1024)
OP_TIMEOUT = (
    10.0  # seconds for one file operation; bash takes pi's own timeout, capped by the tools'
)

# Each program reads its arguments from A (a JSON literal) and prints a JSON object as its last line.
PRELUDE = "import base64, json, os, sys\nA = json.loads({args!r})\n"
PROGRAMS = {
    "read": "data = open(A['path'], 'rb').read({limit} + 1)\n"
    "print(json.dumps({{'data': base64.b64encode(data[:{limit}]).decode(), 'cut': len(data) > {limit}}}))",
    "access": "print(json.dumps({{'ok': os.access(A['path'], os.R_OK | (os.W_OK if A.get('write') else 0))}}))",
    "write": "open(A['path'], 'wb').write(base64.b64decode(A['data']))\nprint(json.dumps({{}}))",
    "mkdir": "os.makedirs(A['path'], exist_ok=True)\nprint(json.dumps({{}}))",
    "exists": "print(json.dumps({{'ok': os.path.exists(A['path'])}}))",
    "stat": "print(json.dumps({{'dir': os.path.isdir(A['path'])}}))",
    "readdir": "print(json.dumps({{'names': sorted(os.listdir(A['path']))}}))",
    "glob": "import fnmatch, pathlib\n"
    "root, found = pathlib.Path(A['cwd']), []\n"
    "for p in root.rglob(A['pattern']) if '/' not in A['pattern'] else root.glob(A['pattern']):\n"
    "    rel = str(p.relative_to(root))\n"
    "    if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(rel + '/', g) for g in A['ignore']):\n"
    "        continue\n"
    "    found.append(rel)\n"
    "    if len(found) >= A['limit']:\n"
    "        break\n"
    "print(json.dumps({{'paths': found}}))",
}
SHELL = (
    "import subprocess\n"
    "r = subprocess.run(['/bin/bash', '-c', A['command']], cwd=A['cwd'], stdout=subprocess.PIPE,\n"
    "                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)\n"
    "sys.stdout.write(r.stdout.decode(errors='replace'))\n"
    "sys.exit(r.returncode)"
)


def run_op(op: str, args: dict, folder: Path) -> dict:
    """One operation of pi's tools in the sandbox over `folder`. bash: {output, exit_code,
    timed_out}; the others: their program's JSON, or {error} in words the model reads."""
    if op == "bash":
        return _shell(args, folder)
    if op not in PROGRAMS:
        return {"error": f"unknown operation {op!r}"}
    code = PRELUDE.format(args=json.dumps(args)) + PROGRAMS[op].format(limit=DATA_LIMIT)
    try:
        r = sandbox.run(code, folder, timeout=OP_TIMEOUT, limits=OP_LIMITS)
    except sandbox.SandboxUnavailable as e:
        return {"error": str(e)}
    if r.exit_code != 0 or not r.stdout.strip():
        last = (r.stderr.strip().splitlines() or [r.reason or "it failed"])[-1]
        return {"error": last}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _shell(args: dict, folder: Path) -> dict:
    from agentloop.tools import RUN_PYTHON_TIMEOUT

    timeout = min(float(args.get("timeout") or RUN_PYTHON_TIMEOUT), RUN_PYTHON_TIMEOUT)
    code = PRELUDE.format(args=json.dumps(args)) + SHELL
    try:
        r = sandbox.run(code, folder, timeout=timeout)
    except sandbox.SandboxUnavailable as e:
        return {"output": str(e), "exit_code": 127, "timed_out": False}
    output = r.stdout + r.stderr
    if r.reason:
        output += f"\n{r.reason[0].upper()}{r.reason[1:]}."
    return {"output": output, "exit_code": r.exit_code, "timed_out": r.timed_out}
