"""MkDocs hook for live code quotes. The logic lives in quoting.py as plain functions; this file connects it.

on_files      index the packages now, add one source page per file (not in the navigation, not searched)
on_page_markdown   expand `::: quote …`, link `file.py:N` and object names, point panels at their recordings
on_page_content    name source-page lines #L<n>, and tell MkDocs' anchor check which ids each page has
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File, InclusionLevel

# A plugin logger: --strict counts its warnings (a plain logging.getLogger's are not counted).
log = get_plugin_logger("quotes")


def _load_quoting():
    # Loaded by path under its own name: MkDocs loads this hook by path too, so `import quoting` would depend on
    # sys.path at that moment. dataclasses need the module in sys.modules while it runs.
    name = "agentloop_book_quoting"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("quoting.py"))
    if spec is None or spec.loader is None:
        raise PluginError("cannot load docs/hooks/quoting.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


quoting = _load_quoting()

_state: dict = {}


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files, config):
    root = _root(config)
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
    _state.update(index=index, source_url=source_url, docs_dir=docs_dir, root=root)
    return files


def on_page_markdown(markdown, page, config, files):
    index = _state["index"]
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
    markdown, errors, notes = quoting.expand_page(markdown, index, context)
    for message in errors:
        log.warning(message)
    for message in notes:
        log.info(message)
    return markdown


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
