"""MkDocs hook: each page's Markdown is turned into HTML once, and again only when something it is made from changes.

Markdown to HTML (Python-Markdown with every extension, mkdocstrings' API reference among them) was half of a
warm `mkdocs build --strict` (6.3 of 13.0 s on a 2-core EPYC, 2026-12-06): the API reference alone, one page
of 86 modules, took 3.2 s, and each chapter is converted again in both Chinese editions. This wraps
mkdocs' Page.render with a cache keyed on everything the conversion reads:
  - the page's Markdown as the hooks left it (quoted listings, the generated `:::` blocks) and its addresses;
  - the Markdown settings (extensions and their configs: the glossary's hover texts are one), the edition, and
    how links are checked (`use_directory_urls`, `validation`);
  - for a page that documents Python with `:::`, every module of the packages it names (mkdocstrings reads them);
  - the versions of the packages that convert.
A link is resolved against the site's files, so a render also records each file it looked up and what it found
(its address, or none), and a stored page is used only while each is still found the same: adding a page does not
convert every other one again. What a render leaves beside its HTML is stored with it and given back on a hit: the
table of contents, the title, the anchors the page has and the links it makes to other pages' anchors (mkdocs
checks them once every page is rendered), the anchors mkdocstrings and autorefs register (so links to the API
reference still resolve), and mkdocstrings' object inventory entries.

A page whose conversion logs a warning is not stored, so it is converted, and warns, at every build: a cached
page can never hide what `--strict` fails on. The cache is kept in .cache/pages.json (build_cache.py).

on_startup    wrap Page.render, Files.get_file_from_path, AutorefsPlugin.register_anchor and Inventory.register
              (once per process)
on_config     read the stored pages (once per process)
on_pre_build  at the English build, keep only the pages the previous run used
on_shutdown   write the pages this run used
"""

from __future__ import annotations

import functools
import logging
import re
from importlib.metadata import version
from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it
from build_cache import DiskCache, kept_across_builds
from mkdocs.structure import pages
from mkdocs.structure.files import Files
from mkdocs.structure.toc import get_toc
from mkdocs_autorefs import AutorefsPlugin
from mkdocstrings import Inventory

CONVERTERS = (
    "mkdocs",
    "markdown",
    "pymdown-extensions",
    "pygments",
    "mkdocstrings",
    "mkdocstrings-python",
    "griffelib",
    "mkdocs-autorefs",
)
_pages = DiskCache("pages", "agentloop 1, " + ", ".join(f"{p} {version(p)}" for p in CONVERTERS))
DOCUMENTS = re.compile(r"^:::\s*([\w.]+)", re.M)  # a mkdocstrings block and the object it documents

# While a page renders: the registrations it makes, and each file it looked up -> what was found
_recording: dict | None = None


def stable(value):
    """A value of the Markdown settings as text that is the same in every process: a function or an
    extension object by its name, never by its address in memory."""
    if isinstance(value, dict):
        return sorted((str(k), stable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [stable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{value.__module__}.{value.__qualname__}"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def found(file) -> list | None:
    """What a link to a file resolves to: its address and whether it is in the site (None: no such file)."""
    return None if file is None else [file.url, str(file.inclusion)]


def sources_digest(markdown: str, config) -> str:
    """The modules mkdocstrings reads for the page's `:::` blocks: every .py file of each package they name."""
    root = Path(config.config_file_path).parent
    packages = sorted({name.split(".")[0] for name in DOCUMENTS.findall(markdown)})
    sources = [
        (p.relative_to(root).as_posix(), p.read_bytes())
        for package in packages
        for p in sorted((root / package).rglob("*.py"))
        if "__pycache__" not in p.parts
    ]
    return DiskCache.digest(sources)


def page_key(page, config) -> str:
    return DiskCache.digest(
        page.markdown,
        page.file.src_uri,
        page.file.dest_uri,
        page.url,
        editions.edition(config),
        stable(config.markdown_extensions),
        stable(config.mdx_configs),
        config.use_directory_urls,
        stable(dict(config.validation)),
        sources_digest(page.markdown, config) if DOCUMENTS.search(page.markdown) else "",
    )


def toc_tokens(items) -> list[dict]:
    """The table of contents as the Markdown toc tokens mkdocs makes it from (get_toc makes it again)."""
    return [
        {"name": i.title, "id": i.id, "level": i.level, "children": toc_tokens(i.children)}
        for i in items
    ]


class _Warnings(logging.Handler):
    """Counts what the conversion logs at WARNING or above to mkdocs' logger (what --strict counts)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1


def _cached(render):
    @functools.wraps(render)
    def render_once(self, config, files):
        global _recording
        key = page_key(self, config)
        if (hit := _pages.get(key)) is not None and _restore(self, hit, config, files):
            return
        warnings, mkdocs_log = _Warnings(), logging.getLogger("mkdocs")
        mkdocs_log.addHandler(warnings)
        _recording = {"registered": [], "lookups": {}}
        try:
            render(self, config, files)
        finally:
            mkdocs_log.removeHandler(warnings)
            recorded, _recording = _recording, None
        if warnings.count == 0 and recorded is not None:
            _pages.put(key, _stored(self, recorded))

    return render_once


def _stored(page, recorded: dict) -> dict:
    links = page.links_to_anchors
    return {
        "content": page.content,
        "toc": toc_tokens(page.toc),
        "title": page._title_from_render,
        "anchors": sorted(page.present_anchor_ids or ()),
        "links": None
        if links is None
        else {file.src_uri: dict(by_anchor) for file, by_anchor in links.items()},
        **recorded,
    }


def _restore(page, stored: dict, config, files) -> bool:
    """Give the page what its render made, and make the registrations it made; False, and nothing done, when
    a file its links looked up is now found otherwise (added, gone, moved): then it renders."""
    look_up = _unwrapped(Files, "get_file_from_path")
    if any(found(look_up(files, path)) != was for path, was in stored["lookups"].items()):
        return False
    links = None
    if stored["links"] is not None:
        links = {}
        for src_uri, by_anchor in stored["links"].items():
            if (file := files.get_file_from_path(src_uri)) is None:
                return False
            links[file] = by_anchor
    page.content = stored["content"]
    page.toc = get_toc(stored["toc"])
    page._title_from_render = stored["title"]
    page.present_anchor_ids = set(stored["anchors"])
    page.links_to_anchors = links
    autorefs = config.plugins.get("autorefs")
    mkdocstrings = config.plugins.get("mkdocstrings")
    for kind, args in stored["registered"]:
        if kind == "anchor" and autorefs is not None:
            identifier, anchor, title, primary = args
            autorefs.register_anchor(page, identifier, anchor, title=title, primary=primary)
        elif kind == "inventory" and mkdocstrings is not None:
            mkdocstrings.handlers.inventory.register(**args)
    return True


def _recorded_anchor(register_anchor):
    @functools.wraps(register_anchor)
    def register(self, page, identifier, anchor=None, *, title=None, primary=True):
        if _recording is not None:
            _recording["registered"].append(["anchor", [identifier, anchor, title, primary]])
        return register_anchor(self, page, identifier, anchor, title=title, primary=primary)

    return register


def _recorded_inventory(register):
    @functools.wraps(register)
    def register_item(self, name, domain, role, uri, priority=1, dispname=None):
        if _recording is not None:
            _recording["registered"].append(
                [
                    "inventory",
                    {
                        "name": name,
                        "domain": domain,
                        "role": role,
                        "uri": uri,
                        "priority": priority,
                        "dispname": dispname,
                    },
                ]
            )
        return register(self, name, domain, role, uri, priority, dispname)

    return register_item


def _recorded_lookup(get_file_from_path):
    @functools.wraps(get_file_from_path)
    def look_up(self, path):
        file = get_file_from_path(self, path)
        if _recording is not None:
            _recording["lookups"][path] = found(file)
        return file

    return look_up


def _unwrapped(owner, name):
    method = getattr(owner, name)
    return getattr(method, "__wrapped__", method)


def on_startup(command, dirty):
    # Each wrapped around the package's own (a hook loaded again wraps anew).
    pages.Page.render = _cached(_unwrapped(pages.Page, "render"))
    Files.get_file_from_path = _recorded_lookup(_unwrapped(Files, "get_file_from_path"))
    AutorefsPlugin.register_anchor = _recorded_anchor(_unwrapped(AutorefsPlugin, "register_anchor"))
    Inventory.register = _recorded_inventory(_unwrapped(Inventory, "register"))


on_config, on_pre_build, on_shutdown = kept_across_builds(_pages)
