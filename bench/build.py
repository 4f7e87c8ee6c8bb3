"""How long one strict build of the book takes: the first in a fresh checkout, then the next ones.

The build runs in a copy of the book's sources (docs/, mkdocs.yml and the packages it quotes) in a temporary
folder, so it starts without the highlight cache our own builds keep in .cache/ (docs/hooks/highlight_once.py):
that first build is what CI and a new reader wait for. The builds after it find the cache, as an author's builds
do at every save; `mkdocs serve` rebuilds the same way. Each is a new process, as `make book` starts one.

Prints, last:
    mkdocs_build_cold_s: <s>
    mkdocs_build_warm_s: <s> (target ≤ 5 s)
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARM_RUNS = 3


def copy_sources(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "docs", dest / "docs", ignore=ignore)
    shutil.copy2(ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    for package in ("agentloop", "demo_server"):
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)
    return dest


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


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = copy_sources(Path(tmp) / "book")
        cold = build_seconds(project, Path(tmp) / "site")
        warm = [build_seconds(project, Path(tmp) / "site") for _ in range(WARM_RUNS)]
        # An author's quicker build: without the generated zh-Hans edition (mkdocs.yml's AGENTLOOP_ZH_HANS).
        two = build_seconds(project, Path(tmp) / "site", AGENTLOOP_ZH_HANS="false")
    print(
        f"cold (no .cache): {cold:.2f} s; warm, {WARM_RUNS} runs: {', '.join(f'{w:.2f}' for w in warm)} s"
    )
    print(f"warm without the zh-Hans edition: {two:.2f} s")
    print(f"mkdocs_build_cold_s: {cold:.2f}")
    print(f"mkdocs_build_warm_s: {statistics.median(warm):.2f} (target ≤ 5 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
