"""`agentloop sandbox --check`: which of the sandbox's protections hold on this machine, in one
table.

What it follows: `docker info`, which says what the machine gives rather than what the program hopes
for. Each row is either read from the machine (which cgroup way exists, whether keyctl is installed)
or measured by a probe run in the sandbox itself (the seccomp mode of its process, what a keyring
call and an AF_VSOCK socket get, which network interfaces it sees). A protection that does not hold
says so, and what holds instead.

What it leaves out: proving each protection against every attack (tests/test_sandbox*.py do that).
"""

from __future__ import annotations

import errno
import os
import subprocess

from agentloop.sandbox import bubblewrap, cgroup, cleanup, data_folder, seccomp_filter

KEYCTL = {"x86_64": 250, "aarch64": 219}  # the keyctl system call's number, per architecture
PROBE_QUOTA = 1 << 20  # the probe's folder holds 1 MiB; it asks for 2, to see who refuses

# Run in the sandbox: one "name value" line per fact it can see from inside.
PROBE = f"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
print("seccomp", open("/proc/self/status").read().split("Seccomp:")[1].split()[0])
number = {KEYCTL}.get(os.uname().machine)
if number:
    got = libc.syscall(number, 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
    print("keyctl", os.strerror(ctypes.get_errno()) if got < 0 else "allowed")
for name, family in (("vsock", 40), ("inet", socket.AF_INET)):
    try:
        socket.socket(family, socket.SOCK_STREAM).close()
        print(name, "allowed")
    except OSError as e:
        print(name, e.strerror)
print("uid", os.getuid())
print("capabilities", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
devices = open("/proc/net/dev").read().splitlines()[2:]  # the network namespace's interfaces
print("interfaces", ",".join(sorted(line.split(":")[0].strip() for line in devices)))
try:
    os.posix_fallocate(os.open("/data/.probe", os.O_CREAT | os.O_WRONLY), 0, {2 * PROBE_QUOTA})
    print("quota", "none during the call")
except OSError as e:
    print("quota", e.strerror)
"""


def probe() -> tuple[dict[str, str], bubblewrap.SandboxResult | None, str | None]:
    """Run PROBE in a throwaway folder made as a conversation's is, with a small quota: (facts, the
    result, why it could not run)."""
    folder = data_folder.create(PROBE_QUOTA, 64)
    try:
        result = bubblewrap.run(PROBE, folder, timeout=30.0)
    except (bubblewrap.SandboxUnavailable, seccomp_filter.FilterUnavailable) as e:
        return {}, None, str(e)
    finally:
        cleanup.remove_tree(folder)
    facts = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return facts, result, None


def bwrap_version() -> str:
    try:
        return subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "not installed: " + bubblewrap.INSTALL


def rows() -> list[tuple[str, str, str]]:
    """(protection, holds: yes / no, what exactly) for each protection."""
    limits = bubblewrap.DEFAULT_LIMITS
    facts, result, problem = probe()
    ran = result is not None and result.exit_code == 0
    mib = 1 << 20
    group = result.cgroup if result else cgroup.kind()
    no_capabilities = facts.get("capabilities", "?").strip("0") == ""
    out = [
        (
            "bubblewrap",
            "yes" if ran else "no",
            bwrap_version() if ran else f"no sandbox starts: {problem}",
        ),
        (
            "namespaces",
            "yes" if ran else "no",
            f"user, pid, network ({facts.get('interfaces', '?')}), ipc, uts, cgroup, mount"
            if ran
            else "-",
        ),
        (
            "runs as",
            "yes" if facts.get("uid") == str(bubblewrap.NOBODY) and no_capabilities else "no",
            f"uid {facts.get('uid', '?')} inside, "
            f"capabilities {facts.get('capabilities', '?')}; outside: "
            + (
                "the real user nobody (the server is root)"
                if os.geteuid() == 0
                else f"uid {os.geteuid()}"
            ),
        ),
        (
            "seccomp filter",
            "yes" if facts.get("seccomp") == "2" else "no",
            f"{len(seccomp_filter.rules())} rules (libseccomp via {seccomp_filter.SYSTEM_PYTHON}); "
            f"keyctl: {facts.get('keyctl', '?')}; AF_VSOCK: {facts.get('vsock', '?')}; "
            f"AF_INET: {facts.get('inet', '?')}",
        ),
        (
            "session keyring",
            "yes" if bubblewrap.keyring_args() else "no",
            "a fresh anonymous one (keyutils' keyctl)"
            if bubblewrap.keyring_args()
            else "inherited from the server (the filter still refuses keyring calls): "
            "apt-get install keyutils",
        ),
        (
            "cgroup",
            "no" if group == cgroup.NONE else "yes",
            group
            if group == cgroup.NONE
            else f"{group}: {limits.sandbox_memory_bytes // mib} MiB for all "
            f"processes (memfd and /tmp included), no swap, "
            f"{limits.processes + bubblewrap.BWRAP_TASKS} tasks",
        ),
        (
            "per-process limits",
            "yes",
            f"{limits.memory_bytes // mib} MiB address space, {limits.cpu_seconds} s CPU, "
            f"{limits.processes} processes, {limits.file_bytes // mib} MiB a file, "
            f"{limits.open_files} files open",
        ),
        (
            "/tmp and /dev/shm",
            "yes" if os.geteuid() == 0 else "no",
            f"{limits.tmp_bytes // mib} MiB, "
            + (
                f"{limits.tmp_inodes} inodes"
                if os.geteuid() == 0
                else "inodes not limited (bwrap's --tmpfs takes a size only)"
            ),
        ),
        quota_row(facts.get("quota")),
        (
            "/proc",
            "yes" if ran else "no",
            f"{len(bubblewrap.hidden_proc_here())} host entries covered (cmdline, config.gz, boot_id, "
            "pressure, …: HIDDEN_PROC in sandbox/bubblewrap.py)",
        ),
    ]
    return out


def quota_row(refused_with: str | None) -> tuple[str, str, str]:
    """Whether the probe's write past its folder's quota failed inside the call (the kernel's
    quota: ENOSPC), or went through (only the check after each run holds)."""
    mib = 1 << 20
    if refused_with == os.strerror(errno.ENOSPC):
        return (
            "/data quota",
            "yes",
            f"a tmpfs of {data_folder.DATA_BYTES // mib} MiB and {data_folder.DATA_ENTRIES} inodes "
            "per conversation: a write past it fails in the call (ENOSPC)",
        )
    return (
        "/data quota",
        "no",
        f"{data_folder.DATA_BYTES // mib} MiB and {data_folder.DATA_ENTRIES} entries, checked after "
        "each run: past it, the next run is refused"
        + ("" if os.geteuid() == 0 else " (not root: no tmpfs can be mounted for /data)"),
    )


def table(found: list[tuple[str, str, str]]) -> str:
    width = max(len(name) for name, _, _ in found)
    lines = [f"{'PROTECTION':<{width}}  HOLDS  DETAIL"]
    lines += [f"{name:<{width}}  {holds:<5}  {detail}" for name, holds, detail in found]
    return "\n".join(lines)


def main() -> int:
    """Print the table; exit 1 when the sandbox cannot run at all, else 0 (a row may say no)."""
    found = rows()
    print(table(found))
    return 0 if found[0][1] == "yes" else 1
