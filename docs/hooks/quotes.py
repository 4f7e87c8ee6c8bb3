"""MkDocs hook for live code quotes. The logic lives in quoting.py as plain functions; this file connects it.

on_config     read the expansions the last build kept (.cache/quotes.json, build_cache.py; once per process)
on_pre_build  at the English build, keep only the expansions the previous run used
on_files      index the packages now, add one source page per file (not in the navigation, not searched)
on_page_markdown   expand `::: quote …`, link `file.py:N` and object names, point panels at their recordings
on_page_content    name source-page lines #L<n>, and tell MkDocs' anchor check which ids each page has
on_shutdown   write the expansions this run used

A page's expansion is kept for the next build, keyed by everything it reads: its Markdown and addresses, the
code it quotes (every indexed file's lines) and quoting.py itself; and whether each recording its panels name
was there, checked again before the kept expansion is used. The errors and notes it gave are kept with it and
logged again, so a broken quote fails every build.

Two editions (mkdocs-static-i18n builds English, then zh-Hant in a second build of the same process): the code
is one, so the packages are indexed and their source pages built once, in the English build; a zh-Hant page's
quotes are expanded from the same index and its links to source lines and to the API reference go to the
English edition's pages (docs/hooks/editions.py says which edition is being built).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import posixpath
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority, get_plugin_logger
from mkdocs.structure.files import File, InclusionLevel

# A plugin logger: --strict counts its warnings (a plain logging.getLogger's are not counted).
log = get_plugin_logger("quotes")


def _load(file: str):
    # Loaded by path under its own name: MkDocs loads this hook by path too, so `import quoting` would depend on
    # sys.path at that moment. dataclasses need the module in sys.modules while it runs.
    name = f"agentloop_book_{file.removesuffix('.py')}"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load docs/hooks/{file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


quoting = _load("quoting.py")
editions = _load("editions.py")
build_cache = _load("build_cache.py")
# The rules are quoting.py's: a changed quoting.py expands every page afresh.
_expanded = build_cache.DiskCache(
    "quotes",
    "agentloop 1, quoting.py "
    + build_cache.DiskCache.digest(Path(quoting.__file__).read_text(encoding="utf-8")),
)


class _EnglishCodeLinks(logging.Filter):
    """MkDocs reports a link that is no page of the build being made ("unrecognized relative link", at INFO).
    A zh-Hant page's links to the English source pages and API reference are such links, on purpose, one per
    quote: this keeps those lines out of the log, and only those (the links written by
    _to_english_code_pages)."""

    def __init__(self):
        super().__init__()
        self.links: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "unrecognized relative link" not in message:
            return True
        link = message.split("'")[3] if message.count("'") >= 4 else ""
        return link not in self.links


_english_links = _EnglishCodeLinks()
logging.getLogger("mkdocs.structure.pages").addFilter(_english_links)

_state: dict = {}


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


# After mkdocs-static-i18n's on_files (-100): it sorts the files of docs/ by language and cannot place a
# generated page (no source path); the source pages are added to the English edition's files only.
@event_priority(-200)
def on_files(files, config):
    root = _root(config)
    if editions.edition(config) != editions.DEFAULT and _state.get("root") == root:
        return files  # the English build of this run indexed the code and built its source pages
    index = quoting.build_index(root)
    for problem in index.problems:
        log.warning(problem)
    docs_dir = Path(config.docs_dir)
    source_url = f"{quoting.SOURCE_DIR}/{{path}}/"
    for path, source in sorted(index.files.items()):
        file = File.generated(
            config,
            quoting.source_page_uri(path),
            content=quoting.source_page(source),
            inclusion=InclusionLevel.NOT_IN_NAV,
        )
        files.append(file)
        # The built URL of every source page, with the file's path as a placeholder (directory URLs or not).
        source_url = file.url.replace(path, "{path}", 1)
    code = build_cache.DiskCache.digest(sorted((p, s.lines) for p, s in index.files.items()))
    _state.update(index=index, code=code, source_url=source_url, docs_dir=docs_dir, root=root)
    return files


def expanded(markdown: str, context) -> tuple[str, list[str], list[str]]:
    """quoting.expand_page's result for the page, from the last build's where nothing it reads has changed."""
    key = build_cache.DiskCache.digest(
        _state["code"], markdown, context.src_uri, context.url, context.where, context.source_url
    )
    kept = _expanded.get(key)
    if kept is not None and all(context.exists(path) == was for path, was in kept["asked"]):
        return kept["markdown"], kept["errors"], kept["notes"]
    asked: list = []

    def exists(docs_path: str) -> bool:
        there = context.exists(docs_path)
        asked.append([docs_path, there])
        return there

    markdown, errors, notes = quoting.expand_page(
        markdown, _state["index"], dataclasses.replace(context, exists=exists)
    )
    _expanded.put(key, {"markdown": markdown, "errors": errors, "notes": notes, "asked": asked})
    return markdown, errors, notes


def on_page_markdown(markdown, page, config, files):
    src_uri = page.file.src_uri
    if src_uri.startswith(quoting.SOURCE_DIR + "/") and page.file.generated_by:
        return markdown
    docs_dir = _state["docs_dir"]
    where = (
        (docs_dir / src_uri).relative_to(_state["root"]).as_posix()
        if docs_dir.is_relative_to(_state["root"])
        else src_uri
    )
    context = quoting.PageContext(
        src_uri=src_uri,
        url=page.url,
        where=where,
        source_url=_state["source_url"],
        exists=lambda docs_path: (
            files.get_file_from_path(docs_path) is not None or (docs_dir / docs_path).is_file()
        ),
    )
    markdown, errors, notes = expanded(markdown, context)
    for message in errors:
        log.warning(message)
    for message in notes:
        log.info(message)
    if editions.edition(config) != editions.DEFAULT:
        markdown = _to_english_code_pages(markdown, src_uri, page.url)
    return markdown


# A Markdown link's target: a page of docs/ (.md), then its anchor.
MD_TARGET = re.compile(r"\]\((?P<path>[^)\s#:]+\.md)(?P<anchor>#[^)\s]*)?(?=[)\s])")


def _to_english_code_pages(markdown: str, src_uri: str, page_url: str) -> str:
    """On a page of another edition, a link to a source page, or to an entry of the API reference (an anchor on
    reference.md), becomes a link to the English edition's page: the code and its docstrings are one, built
    once. A link to the reference page itself stays in the page's edition."""
    here = quoting.page_url_dir(page_url)

    def fix(m: re.Match) -> str:
        docs_path = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), m["path"]))
        to_source = docs_path.startswith(quoting.SOURCE_DIR + "/")
        to_api = docs_path == quoting.REFERENCE_PAGE and m["anchor"]
        if not (to_source or to_api):
            return m[0]
        url = docs_path.removesuffix(".md") + "/"
        link = posixpath.relpath(url, here or ".") + "/" + (m["anchor"] or "")
        _english_links.links.add(link)
        return "](" + link

    return MD_TARGET.sub(fix, markdown)


def on_page_content(html, page, config, files):
    ids = quoting.html_ids(html)
    if page.file.src_uri.startswith(quoting.SOURCE_DIR + "/") and page.file.generated_by:
        html, line_ids = quoting.anchor_source_lines(html)
        ids |= line_ids
        html = f'<div class="agentloop-source">{html}</div>'
    # Pygments writes its line ids into stashed HTML that MkDocs' anchor check does not see.
    if page.present_anchor_ids is not None:
        page.present_anchor_ids |= ids
    return html


def on_serve(server, config, builder):
    # `mkdocs serve` rebuilds when the quoted code changes, not only the chapters.
    root = _root(config)
    for package in quoting.PACKAGES:
        if (root / package).is_dir():
            server.watch(str(root / package))
    server.watch(str(Path(__file__).with_name("quoting.py")))
    return server


on_config, on_pre_build, on_shutdown = build_cache.kept_across_builds(_expanded)
