"""The sandbox's seccomp filter: the system calls model-written code may not make, as a BPF program
for bwrap.

What it follows: Flatpak's filter (flatpak-run.c, setup_seccomp) and Docker's default profile.
Everything is allowed except a list of calls that reach kernel state no namespace isolates (the
keyring, AF_VSOCK and other socket families, io_uring, BPF, perf events) or that only a system
administrator needs (mount, modules, kexec, the clock). A denied call returns an error (EPERM,
EAFNOSUPPORT for a socket family, ENOSYS for clone3) rather than killing the process, so Python
raises a clean OSError the model can read.

How it is built: with libseccomp, through its Python bindings from Debian (python3-seccomp). Those
bindings are compiled for the system's python3, not for this project's virtual environment (another
build of Python), so `program()` runs a short script under /usr/bin/python3 that builds the filter
and writes the BPF bytes to stdout; the bytes are kept for the life of the process. libseccomp does
the parts that are easy to get wrong by hand: the architecture check (calls made through another
ABI, such as 32-bit `int 0x80` or x32, get EPERM) and the jumps of the BPF program.

What it leaves out: arguments behind pointers (seccomp sees registers only: clone3's flags, for
instance, which is why clone3 is refused with ENOSYS and glibc falls back to clone, whose flags it
can read), and the many calls Docker allows only with capabilities the sandbox already lacks.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess

SYSTEM_PYTHON = "/usr/bin/python3"
INSTALL = "sudo apt-get install python3-seccomp"

# Calls refused with EPERM, each with why. Names this libseccomp does not know are skipped.
DENIED = {
    "keyctl": "the kernel keyring is shared with the host's processes: its secrets, read or wiped",
    "add_key": "the kernel keyring",
    "request_key": "the kernel keyring",
    "userfaultfd": "a favourite tool of kernel exploits, to stall the kernel mid-copy",
    "io_uring_setup": "io_uring: a second system-call interface that seccomp cannot see into",
    "io_uring_enter": "io_uring",
    "io_uring_register": "io_uring",
    "perf_event_open": "performance counters: a side channel on the host",
    "bpf": "loading programs into the kernel",
    "ptrace": "tracing another process, even one of the sandbox's own",
    "process_vm_readv": "reading another process's memory",
    "process_vm_writev": "writing another process's memory",
    "pidfd_getfd": "taking a file descriptor out of another process",
    "process_madvise": "acting on another process's memory",
    "kcmp": "comparing kernel objects of other processes",
    "kexec_load": "loading a new kernel",
    "kexec_file_load": "loading a new kernel",
    "init_module": "loading a kernel module",
    "finit_module": "loading a kernel module",
    "delete_module": "unloading a kernel module",
    "mount": "mounting file systems",
    "umount2": "unmounting the sandbox's own mounts, to see what they cover",
    "pivot_root": "changing the root",
    "move_mount": "the new mount API",
    "open_tree": "the new mount API",
    "fsopen": "the new mount API",
    "fsconfig": "the new mount API",
    "fsmount": "the new mount API",
    "fspick": "the new mount API",
    "mount_setattr": "the new mount API",
    "unshare": "new namespaces, in which the code would be root",
    "setns": "joining another namespace",
    "swapon": "swap",
    "swapoff": "swap",
    "reboot": "rebooting",
    "acct": "process accounting",
    "quotactl": "disk quotas",
    "syslog": "the kernel's log",
    "lookup_dcookie": "kernel profiling",
    "open_by_handle_at": "opening files by handle, around the mount namespace ('shocker')",
    "name_to_handle_at": "file handles",
    "uselib": "an obsolete loader",
    "vhangup": "hanging up the terminal",
    "iopl": "hardware I/O ports",
    "ioperm": "hardware I/O ports",
    "settimeofday": "the host's clock",
    "clock_settime": "the host's clock",
    "clock_adjtime": "the host's clock",
    "adjtimex": "the host's clock",
    "fanotify_init": "watching the whole file system",
    "memfd_secret": "memory hidden from the kernel's own accounting tools",
    "vm86": "virtual 8086 mode",
    "vm86old": "virtual 8086 mode",
    "nfsservctl": "the NFS server",
}

# The one socket family the code may use. Not IP: the sandbox's network holds nothing but its own
# loopback, and what a loopback TCP connection queues is kept in the host's shared TCP memory, which no
# cgroup v1 limit counts (1.8 GiB queued by twelve processes, 45 MiB counted). Not netlink: a socket's
# unread answers are not counted either (600 MiB for 2,880 sockets). Unix sockets' buffers are counted.
ALLOWED_FAMILIES = {1: "AF_UNIX"}
NAMESPACE_FLAGS = {  # clone() with any of these makes a namespace
    "CLONE_NEWTIME": 0x80,
    "CLONE_NEWNS": 0x20000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
TERMINAL_IOCTLS = {
    "TIOCSTI": 0x5412,
    "TIOCLINUX": 0x541C,
}  # typing into a terminal; the console's tricks


def rules() -> list[dict]:
    """The filter as data: each rule is a call, the errno it gets, and conditions on its arguments
    (all must hold). Several rules for one call are alternatives."""
    out = [{"call": name, "errno": errno.EPERM, "args": []} for name in DENIED]
    out.append(
        {"call": "clone3", "errno": errno.ENOSYS, "args": []}
    )  # its flags are behind a pointer
    out += [
        {"call": "clone", "errno": errno.EPERM, "args": [[0, "MASKED_EQ", flag, flag]]}
        for flag in NAMESPACE_FLAGS.values()
    ]
    out += [
        {"call": "ioctl", "errno": errno.EPERM, "args": [[1, "MASKED_EQ", 0xFFFFFFFF, request]]}
        for request in TERMINAL_IOCTLS.values()
    ]
    out.append(
        {"call": "personality", "errno": errno.EPERM, "args": [[0, "NE", 0, 0]]}
    )  # PER_LINUX only
    out += socket_rules()
    return out


def socket_rules() -> list[dict]:
    """socket() for every family but ALLOWED_FAMILIES gets EAFNOSUPPORT, as Flatpak does: one rule
    per gap below an allowed family, one for everything past the last (AF_INET is 2, AF_NETLINK 16,
    AF_VSOCK 40)."""
    out, previous = [], -1
    for family in sorted(ALLOWED_FAMILIES):
        out += [
            {"call": "socket", "errno": errno.EAFNOSUPPORT, "args": [[0, "EQ", gap, 0]]}
            for gap in range(previous + 1, family)
        ]
        previous = family
    out.append({"call": "socket", "errno": errno.EAFNOSUPPORT, "args": [[0, "GT", previous, 0]]})
    return out


# Run by the system's python3, which has libseccomp's bindings: rules in on stdin, BPF out.
BUILD = r"""
import json, sys, seccomp
f = seccomp.SyscallFilter(seccomp.ALLOW)
# A call through another ABI (int 0x80, x32) gets EPERM, whatever it is.
f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(1))
for rule in json.load(sys.stdin):
    args = [seccomp.Arg(i, getattr(seccomp, op), a, b) if op == "MASKED_EQ" else
            seccomp.Arg(i, getattr(seccomp, op), a) for i, op, a, b in rule["args"]]
    try:
        f.add_rule_exactly(seccomp.ERRNO(rule["errno"]), rule["call"], *args)
    except RuntimeError:  # a call this libseccomp (or this architecture) does not know
        print(rule["call"], file=sys.stderr)
sys.stdout.flush()
f.export_bpf(sys.stdout.buffer)
"""


class FilterUnavailable(RuntimeError):
    """libseccomp's Python bindings are missing: the sandbox does not run without its filter."""


@functools.lru_cache(maxsize=1)
def program() -> tuple[bytes, tuple[str, ...]]:
    """The BPF program bwrap loads, and the calls this machine's libseccomp did not know."""
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", BUILD],
            input=json.dumps(rules()).encode(),
            capture_output=True,
            timeout=60,
        )
    except OSError as e:
        raise FilterUnavailable(f"{SYSTEM_PYTHON} cannot run ({e}): install {INSTALL}") from e
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise FilterUnavailable(
            f"the seccomp filter could not be built ({why[0]}): install with {INSTALL}"
        )
    return done.stdout, tuple(done.stderr.decode().split())


def program_fd() -> int:
    """A file descriptor holding the program, at offset 0, for bwrap's --seccomp (read once)."""
    fd = os.memfd_create("seccomp.bpf", 0)
    os.write(fd, program()[0])
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
