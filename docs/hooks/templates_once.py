"""MkDocs hook: the theme's Jinja templates are compiled once, and kept as bytecode in .cache/jinja/ for the next
build; and the theme's static files are listed once a build, not once an edition.

mkdocs-static-i18n builds each edition with a Jinja environment of its own, so Material's templates were compiled
anew for every edition of every build (144 compilations in one build, 2026-12-05). Jinja's FileSystemBytecodeCache
keys each compiled template by its name and a checksum of its source, and its bytecode by the Python version that
wrote it, so a changed template or another Python compiles again. A folder that cannot be written builds without it.

Each edition's build also lists every file of the theme's folders (Material's icons are thousands) and matches
each name against a dozen patterns, to copy its static files: 0.85 s of a build under cProfile, three times the
same list. Files.add_files_from_theme is wrapped so that it lists them for the first edition and adds the same
files for the others; the theme's folders and static templates are the key, and each build lists them afresh.

on_startup    wrap Files.add_files_from_theme (once per process)
on_pre_build  at the English build, forget the last build's list
on_env        give the edition's environment the cache
"""

from __future__ import annotations

import functools
from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it
import jinja2
from mkdocs.structure.files import File, Files

# (theme folders, static templates) -> [(path, the theme folder it is in)] for this build
_theme_files: dict[tuple, list[tuple[str, str]]] = {}


def _listed_once(add_files_from_theme):
    @functools.wraps(add_files_from_theme)
    def add_theme_files(self, env, config):
        # mkdocs-static-i18n puts its sitemap's folder first once more for each edition: a folder named
        # twice finds no file the first time did not, so each is named once in the key.
        key = (
            tuple(dict.fromkeys(config.theme.dirs)),
            tuple(sorted(config.theme.static_templates)),
        )
        if key not in _theme_files:
            every = Files(
                []
            )  # no page of docs/ to shadow a theme file: each edition's own are checked below
            add_files_from_theme(every, env, config)
            _theme_files[key] = [(f.src_uri, f.src_dir) for f in every]
        for path, folder in _theme_files[key]:
            if self.get_file_from_path(path) is None:  # a file of docs/ overrides the theme's
                self.append(File(path, folder, config.site_dir, config.use_directory_urls))

    return add_theme_files


def on_startup(command, dirty):
    own = Files.add_files_from_theme
    Files.add_files_from_theme = _listed_once(getattr(own, "__wrapped__", own))


def on_pre_build(config):
    if editions.edition(config) == editions.DEFAULT:
        _theme_files.clear()


def on_env(env, config, files):
    folder = Path(config.config_file_path).parent / ".cache" / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return env
    env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder))
    return env
