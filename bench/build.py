"""How long one strict build of the book takes: the first in a fresh checkout, then the next ones.

The build runs in a copy of the book's sources (docs/, mkdocs.yml and the packages it quotes) in a temporary
folder, so it starts without what our own builds keep in .cache/ for the next (docs/hooks/build_cache.py):
that first build is what CI and a new reader wait for. The builds after it find the cache, as an author's builds
do at every save; `mkdocs serve` rebuilds the same way. Each is a new process, as `make book` starts one.

It then starts `mkdocs serve` in the copy, with and without --dirty, every edition and then the English one alone
(AGENTLOOP_EDITION=en, an author's preview), changes one chapter, and reads how long the rebuild took from serve's
own "Documentation built in N seconds".

Prints, last:
    mkdocs_build_cold_s: <s>
    mkdocs_build_warm_s: <s> (target ≤ 5 s)
    mkdocs_serve_rebuild_s: <s> (--dirty: <s>; target < 2 s)
    mkdocs_serve_rebuild_s, English edition alone: <s> (--dirty: <s>; target < 2 s)
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.book_copy import copy_book  # noqa: E402

WARM_RUNS = 3


def build_seconds(project: Path, site: Path, **env: str) -> float:
    t0 = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=project,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **env},
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        raise SystemExit("the strict build failed")
    return elapsed


def serve_rebuild_seconds(project: Path, *flags: str, **env: str) -> float:
    """Start `mkdocs serve` (`env` added to its environment), change one chapter once it serves, and return the
    rebuild's own time."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", *flags, "-a", f"127.0.0.1:{port}"],
        cwd=project,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # The English chapter 9 (its editions are 09-sampling.zh-Hant.md and the generated zh-Hans).
    chapter = next(p for p in (project / "docs/chapters").glob("09-*.md") if p.name.count(".") == 1)
    try:
        for line in serve.stdout:
            if "Serving on" in line:
                chapter.write_text(chapter.read_text(encoding="utf-8") + "\n", encoding="utf-8")
            elif "Detected file changes" in line:
                break
        for line in serve.stdout:
            if m := re.search(r"Documentation built in ([\d.]+) seconds", line):
                return float(m.group(1))
            if "ERROR" in line:
                raise SystemExit(f"mkdocs serve {' '.join(flags)}: {line.strip()}")
        raise SystemExit("mkdocs serve ended before it rebuilt")
    finally:
        serve.terminate()
        serve.wait(timeout=30)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = copy_book(Path(tmp) / "book")
        cold = build_seconds(project, Path(tmp) / "site")
        warm = [build_seconds(project, Path(tmp) / "site") for _ in range(WARM_RUNS)]
        # An author's quicker build: without the generated zh-Hans edition (mkdocs.yml's AGENTLOOP_ZH_HANS).
        two = build_seconds(project, Path(tmp) / "site", AGENTLOOP_ZH_HANS="false")
        rebuild = serve_rebuild_seconds(project)
        dirty = serve_rebuild_seconds(project, "--dirty")
        # An author's preview of the English edition alone (mkdocs.yml's AGENTLOOP_EDITION).
        english = serve_rebuild_seconds(project, AGENTLOOP_EDITION="en")
        english_dirty = serve_rebuild_seconds(project, "--dirty", AGENTLOOP_EDITION="en")
    print(
        f"cold (no .cache): {cold:.2f} s; warm, {WARM_RUNS} runs: {', '.join(f'{w:.2f}' for w in warm)} s"
    )
    print(f"warm without the zh-Hans edition: {two:.2f} s")
    print(f"mkdocs_build_cold_s: {cold:.2f}")
    print(f"mkdocs_build_warm_s: {statistics.median(warm):.2f} (target ≤ 5 s)")
    print(f"mkdocs_serve_rebuild_s: {rebuild:.2f} (--dirty: {dirty:.2f}; target < 2 s)")
    print(
        f"mkdocs_serve_rebuild_s, English edition alone: {english:.2f} (--dirty: {english_dirty:.2f}; target < 2 s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
