"""A copy of the book's sources in another folder: docs/, mkdocs.yml and the packages the book quotes. Tests build
it to break the code without touching ours (tests/test_book.py); bench/build.py times its builds from cold.

    from scripts.book_copy import copy_book
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def copy_book(dest: Path, build_cache: bool = False) -> Path:
    """The book's sources copied into `dest` (returned). `build_cache`: also what our last build kept for the next
    (.cache/, docs/hooks/build_cache.py), so the copy's build redoes only what changed; without it, the copy
    builds as a fresh checkout does."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "docs", dest / "docs", ignore=ignore)
    shutil.copy2(ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    for package in ("agentloop", "demo_server"):
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)
    # Each hook's file (docs/hooks/*_once.py, quotes.py, book.py) and Jinja's bytecode: not .cache/vllm/.
    kept_by_hooks = (
        "book.json",
        "highlight.json",
        "pages.json",
        "quotes.json",
        "search.json",
        "jinja",
    )
    for kept in kept_by_hooks if build_cache else ():
        if (ROOT / ".cache" / kept).exists():
            (dest / ".cache").mkdir(parents=True, exist_ok=True)
            copy = shutil.copytree if (ROOT / ".cache" / kept).is_dir() else shutil.copy2
            copy(ROOT / ".cache" / kept, dest / ".cache" / kept)
    return dest
