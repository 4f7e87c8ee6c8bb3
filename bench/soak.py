"""Memory over many runs: N runs back to back through the real demo server (uvicorn on 127.0.0.1, real HTTP and
SSE, a tiny checkpoint), printing the process's resident memory (RSS) as it goes.

Each run is what a panel does in the live chapters, made as cheap as it can be while still going round the loop:
a forced run_python call (auto-approved, run in the real sandbox), its result, and a short answer, a few tokens
each. The server runs in this process (its thread) so that --trace can compare tracemalloc snapshots at the
first mark and the end and print the lines whose allocations grew most; the client's share is small and steady.

Prints RSS every --every runs, then last: the growth from run --first to the last run, as a percentage of RSS at
run --first (target: < 3 % from run 100 to run 300). Usage: python bench/soak.py [--runs 300] [--trace]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agentloop.model_families import FAMILIES  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402
from demo_server import runs as server_runs  # noqa: E402
from demo_server.app import create_app  # noqa: E402
from demo_server.client import Client, ServerThread, free_port  # noqa: E402

SETTINGS = {
    "max_new_tokens": 40,
    "max_steps": 2,
    "temperature": 0,
    "auto_approve": True,
    "tools": ["run_python"],
}


def rss_mib() -> float:
    """This process's resident set size, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def trimmed_rss_mib() -> float | None:
    """RSS after glibc's malloc_trim(0) hands the free pages in its heaps back to the OS: what RSS holds beyond
    this is in use; the difference is freed memory the allocator kept (None where libc is not glibc)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return rss_mib()


def kept_events(app) -> tuple[int, int, float]:
    """Runs the server keeps for late readers, their events, and those events' size as JSON (MiB)."""
    runs = list(app.state.current.runs.values())
    events = [e for run in runs for e in run.log.events]
    return len(runs), len(events), sum(len(json.dumps(e)) for e in events) / 2**20


def one_run(client: Client, forced: list[str]) -> str:
    run_id = client.start_run("What is 2**64?", SETTINGS, forced)
    events = list(client.run_events(run_id))
    assert events[-1]["type"] == "run_end", events[-1]
    assert any(e["type"] == "tool_result" for e in events), "the run must go round the loop"
    return events[-1]["stop_reason"]


def top_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int = 12) -> list[str]:
    stats = after.compare_to(before, "lineno")
    return [
        f"  {s.size_diff / 1024:+9.1f} KiB {s.count_diff:+7d} blocks  {s.traceback[0]}"
        for s in stats[:n]
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--every", type=int, default=20, help="print RSS every this many runs")
    ap.add_argument(
        "--first", type=int, default=100, help="growth is measured from this run to the last"
    )
    ap.add_argument(
        "--model", default="gemma4", choices=sorted(FAMILIES), help="the tiny checkpoint's family"
    )
    ap.add_argument(
        "--trace", action="store_true", help="tracemalloc: the lines that grew from --first on"
    )
    ap.add_argument(
        "--no-trim",
        action="store_true",
        help="without runs.return_freed_memory (malloc_trim after each run), to compare",
    )
    args = ap.parse_args()
    if args.no_trim:
        server_runs.LIBC = None

    import torch

    torch.set_num_threads(1)  # a shared machine: one intra-op thread keeps the timing steady
    family = FAMILIES[args.model]
    forced = [
        family.write_call("run_python", {"code": "print(2**64)"}),
        "18446744073709551616." + family.stop_pieces[0],
    ]
    port = free_port()
    site = Path(tempfile.mkdtemp(prefix="agentloop-soak-"))
    app = create_app(
        model=str(MODELS_DIR / f"tiny-{args.model}"),
        site_dir=site,
        port=port,
        allow_forced=True,
        device="cpu",
        orphan_s=3600,
    )
    server = ServerThread(app, port).start()
    client = Client(server.url)
    client.wait_ready()
    if args.trace:
        tracemalloc.start(1)
    marks: dict[int, float] = {}
    snapshot = None
    start = time.monotonic()
    try:
        for i in range(1, args.runs + 1):
            one_run(client, forced)
            if i % args.every == 0 or i == args.first:
                gc.collect()
                marks[i] = rss_mib()
                runs, events, size = kept_events(app)
                print(
                    f"run {i:4d}  RSS {marks[i]:7.1f} MiB  kept: {runs} runs, {events} events, {size:.1f} MiB"
                    f"  ({time.monotonic() - start:6.1f} s)",
                    flush=True,
                )
            if args.trace and i == args.first:
                snapshot = tracemalloc.take_snapshot()
    finally:
        client.close()
        server.stop()
    if snapshot is not None:
        print(f"tracemalloc, run {args.first} to run {args.runs}, the lines that grew most:")
        print("\n".join(top_growth(snapshot, tracemalloc.take_snapshot())))
    before = rss_mib()
    trimmed = trimmed_rss_mib()
    if trimmed is not None:
        print(
            f"RSS {before:.1f} MiB, after malloc_trim(0) {trimmed:.1f} MiB: the allocator held "
            f"{before - trimmed:.1f} MiB of freed memory"
        )
    last = max(marks)
    growth = 100 * (marks[last] - marks[args.first]) / marks[args.first]
    print(f"RSS growth from run {args.first} to run {last}: {growth:+.2f} % (target < 3 %)")


if __name__ == "__main__":
    main()
