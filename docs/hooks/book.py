"""MkDocs hook for the book's teaching conventions. The logic lives in conventions.py as plain functions.

on_config          feed the glossary's terms to the abbr extension, so every page shows them on hover
on_page_markdown   check the page (chapter links, figure, exercises, terms before their chapter); list the
                   package's modules on the API reference page
on_page_content    inline each figure's SVG, so that it takes the page's colours in light and dark; keep a
                   term's hover on its first appearance only
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger("book")

MODULES_MARKER = "<!-- every module -->"
PACKAGES = ("agentloop", "demo_server")


def _load_conventions():
    name = "agentloop_book_conventions"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("conventions.py"))
    if spec is None or spec.loader is None:
        raise PluginError("cannot load docs/hooks/conventions.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


conventions = _load_conventions()
_state: dict = {}


def on_config(config):
    docs = Path(config.docs_dir)
    glossary = docs / "glossary.md"
    terms, errors = (
        conventions.parse_glossary(glossary.read_text(encoding="utf-8"))
        if glossary.exists()
        else ([], [])
    )
    for message in errors:
        log.warning(message)
    if "abbr" in config.markdown_extensions:
        config.mdx_configs.setdefault("abbr", {})["glossary"] = conventions.glossary_terms(terms)
    root = Path(config.config_file_path).resolve().parent
    files = [
        p.relative_to(root).as_posix()
        for package in PACKAGES
        if (root / package).is_dir()
        for p in (root / package).rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    _state.update(terms=terms, docs=docs, root=root, modules=conventions.python_modules(files))
    return config


def on_page_markdown(markdown, page, config, files):
    src_uri = page.file.src_uri
    if page.file.generated_by:
        return markdown
    docs, root = _state["docs"], _state["root"]
    where = (docs / src_uri).relative_to(root).as_posix() if docs.is_relative_to(root) else src_uri
    for message in conventions.check_page(src_uri, markdown, where, _state["terms"]):
        log.warning(message)
    if MODULES_MARKER in markdown:
        listing = "\n\n".join(f"::: {module}" for module in _state["modules"])
        markdown = markdown.replace(MODULES_MARKER, listing)
    return markdown


def on_page_content(html, page, config, files):
    folder = _state["docs"] / "assets" / "figures"

    def read_svg(name):
        path = folder / f"{name}.svg"
        return path.read_text(encoding="utf-8") if path.is_file() else None

    html, missing = conventions.inline_figures(html, read_svg)
    html = conventions.first_abbr_only(html)
    for src in missing:
        log.warning(f"{page.file.src_uri}: figure {src} is not in docs/assets/figures/")
    return html
