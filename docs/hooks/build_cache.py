"""What one build of the book keeps for the next: a JSON file in .cache/ beside mkdocs.yml (git ignores .cache/).

The hooks that redo the same work on unchanged input use it: book.py (the glossary's parse, a page's checks),
quotes.py (a page's expanded quotes), highlight_once.py (a coloured code block), render_once.py (a page's HTML)
and search_once.py (a page's search entries). A value is looked up by the digest of everything it depends on, and the
file's `versions` names the code and packages that made the values: another version starts afresh. The file holds
only what the last run used, so it never grows past one build's worth; a file that cannot be read is a cold start,
never an error; a write is whole or not at all, and skipped when the file already holds what this run used. Not a hook itself (mkdocs.yml does not list it).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads a hook


class DiskCache:
    def __init__(self, name: str, versions: str):
        self.name, self.versions = name, versions
        self.values: dict = {}  # digest -> value (JSON)
        self.used: set[str] = set()  # the digests this run looked up
        self.read: set[str] = set()  # the digests the file held when it was read
        self.changed = False  # whether a value was added since
        self.path: Path | None = (
            None  # named by the first config: .cache/NAME.json beside mkdocs.yml
        )

    @staticmethod
    def digest(*parts) -> str:
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def open(self, config) -> None:
        """Read the values stored beside this config's mkdocs.yml (once a process)."""
        if self.path is not None:
            return
        self.path = Path(config.config_file_path).parent / ".cache" / f"{self.name}.json"
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if stored["versions"] == self.versions:
                self.values.update(stored["values"])
                self.read = set(stored["values"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # none yet, or one this version cannot read: everything is computed afresh

    def get(self, key: str):
        self.used.add(key)
        return self.values.get(key)

    def put(self, key: str, value) -> None:
        self.used.add(key)
        self.values[key] = value
        self.changed = True

    def new_run(self) -> None:
        """Keep only what the previous run used, so a long `mkdocs serve` does not grow."""
        if self.used:
            self.values = {key: self.values[key] for key in self.used if key in self.values}
            self.used = set()

    def save(self) -> None:
        if self.path is None or not self.used:
            return
        if not self.changed and self.used == self.read:
            return  # the file already holds exactly these values (the pages' is 20 MB: 0.2 s to write)
        values = {key: self.values[key] for key in self.used if key in self.values}
        try:
            self.path.parent.mkdir(exist_ok=True)
            partial = self.path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(
                json.dumps({"versions": self.versions, "values": values}), encoding="utf-8"
            )
            os.replace(partial, self.path)  # a build killed mid-write leaves the old file
            self.read, self.changed = set(values), False
        except OSError:
            pass  # a read-only checkout builds, just without the cache


def kept_across_builds(cache: DiskCache):
    """The hook functions a hook that keeps `cache` defines (on_config, on_pre_build, on_shutdown = …): read
    the stored values once a process, at the English edition's build keep only what the previous run used (so
    `mkdocs serve` does not grow), and write what this run used at the end."""

    def on_config(config):
        cache.open(config)

    def on_pre_build(config):
        if editions.edition(config) == editions.DEFAULT:
            cache.new_run()

    def on_shutdown():
        cache.save()

    return on_config, on_pre_build, on_shutdown
