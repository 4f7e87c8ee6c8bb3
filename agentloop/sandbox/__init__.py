"""run_python's sandbox: model-written code run where it can do little harm, and what it leaves behind read
as hostile input (chapter 13).

- `bubblewrap.py`: the sandbox: bubblewrap's namespaces, the limits, a nobody user, run() and
  check()
- `seccomp_filter.py`: the system calls the code may not make, built with libseccomp
- `cgroup.py`: a cgroup per run: one memory and task limit for all its processes
- `data_folder.py`: the conversation's folder (/data) from the host's side: the kernel's quota, read
  as hostile
- `cleanup.py`: folders removed whatever the code left in them; the sweep at start
- `protections.py`: `agentloop sandbox --check`: which of these protections hold on this machine

Callers need only what is handed on here: run() a piece of code in a folder, and what it returns or raises.
"""

from agentloop.sandbox.bubblewrap import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    FolderFull,
    Limits,
    SandboxResult,
    SandboxUnavailable,
    check,
    run,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_TIMEOUT",
    "FolderFull",
    "Limits",
    "SandboxResult",
    "SandboxUnavailable",
    "check",
    "run",
]
