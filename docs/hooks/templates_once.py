"""MkDocs hook: the theme's Jinja templates are compiled once, and kept as bytecode in .cache/jinja/ for the next
build.

mkdocs-static-i18n builds each edition with a Jinja environment of its own, so Material's templates were compiled
anew for every edition of every build (144 compilations in one build, 2026-12-05). Jinja's FileSystemBytecodeCache
keys each compiled template by its name and a checksum of its source, and its bytecode by the Python version that
wrote it, so a changed template or another Python compiles again. A folder that cannot be written builds without it.

on_env  give the edition's environment the cache
"""

from __future__ import annotations

from pathlib import Path

import jinja2


def on_env(env, config, files):
    folder = Path(config.config_file_path).parent / ".cache" / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return env
    env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder))
    return env
