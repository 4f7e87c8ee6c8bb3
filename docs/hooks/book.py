"""MkDocs hook for the book's teaching conventions. The logic lives in conventions.py as plain functions.

on_config          feed the glossary's terms to the abbr extension, so every page shows them on hover; at the
                   English build, keep only the checks the previous run used
on_page_markdown   check the page (chapter links, figure, exercises, terms before their chapter); list the
                   package's modules on the API reference page
on_page_content    inline each figure's SVG, so that it takes the page's colours in light and dark; keep a
                   term's hover on its first appearance only
on_shutdown        write the checks this run used

The glossary's parse and each page's check are pure functions of their text (and of conventions.py, and of the
glossary's terms): their results are kept in .cache/book.json (build_cache.py) for the next build, which checks
only what changed and logs the kept messages again, so a page that breaks a rule fails every build.

In a Chinese edition (zh-Hant, mkdocs-static-i18n's second build, and zh-Hans, generated from it; docs/hooks/editions.py
names them): the hover text comes
from glossary.zh-Hant.md (on the Chinese spelling and on the English one written beside it at first use), a
figure is drawn from NAME.zh-Hant.svg where it exists, a translated page is checked by the Chinese reading of the
rules (conventions.py), and the API reference lists no module again: its entries are the code's English
docstrings, rendered once in the English edition, and the zh-Hant page links there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import posixpath
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger("book")

MODULES_MARKER = "<!-- every module -->"
PACKAGES = ("agentloop", "demo_server")


def _load(file: str):
    name = f"agentloop_book_{file.removesuffix('.py')}"
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load docs/hooks/{file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


conventions = _load("conventions.py")
editions = _load("editions.py")
build_cache = _load("build_cache.py")
_state: dict = {}
# The rules are conventions.py's: a changed conventions.py checks every page afresh.
_checked = build_cache.DiskCache(
    "book",
    "agentloop 1, conventions.py "
    + build_cache.DiskCache.digest(Path(conventions.__file__).read_text(encoding="utf-8")),
)

# The zh-Hant edition's API reference: the entries are the code's docstrings, in English, built once. An HTML
# link: a Markdown one to a page of the other edition would be reported as no page of this build.
API_IN_ENGLISH = (
    "每個模組的說明取自程式碼的 docstring（英文），只在英文版建置一次："
    '請見英文版的 <a href="{url}" hreflang="en">API reference</a>。'
)


def _glossary(docs: Path, lang: str) -> tuple[list, list[str]]:
    path = docs / ("glossary.md" if lang == editions.DEFAULT else f"glossary.{lang}.md")
    try:
        text = editions.read(path)  # the zh-Hans glossary is the zh-Hant one, converted
    except FileNotFoundError:
        return [], []
    key = build_cache.DiskCache.digest("glossary", text, path.name)
    if (kept := _checked.get(key)) is None:
        terms, errors = conventions.parse_glossary(text, f"docs/{path.name}")
        kept = [[dataclasses.asdict(t) for t in terms], errors]
        _checked.put(key, kept)
    return [conventions.Term(**t) for t in kept[0]], kept[1]


def _hover(docs: Path, lang: str, terms: list) -> dict[str, str]:
    """Every spelling -> its hover text. In a translation, the English spellings of each entry (written beside
    the Chinese at first use) show the translated entry too: Markdown's abbr matches whole words only, and
    Chinese text has no spaces to end a word at."""
    hover = conventions.glossary_terms(terms)
    if lang != editions.DEFAULT:
        english, _ = _glossary(docs, editions.DEFAULT)
        by_id = {term.id: term.definition for term in terms}
        for term in english:
            for form in term.forms:
                if term.id in by_id:
                    hover.setdefault(form, by_id[term.id])
    return hover


def on_config(config):
    try:  # Material's search cuts Chinese into words with jieba, which announces its dictionary on stderr
        import jieba

        jieba.setLogLevel(logging.WARNING)
    except ImportError:
        pass
    docs = Path(config.docs_dir)
    lang = editions.edition(config)
    _checked.open(config)
    # The English edition's on_config starts a build; here, not at on_pre_build, as the glossary is read now.
    if lang == editions.DEFAULT:
        _checked.new_run()
    terms, errors = _glossary(docs, lang)
    if lang != editions.DEFAULT and not terms:
        terms, errors = _glossary(docs, editions.DEFAULT)  # not translated yet: the English entries
    for message in errors:
        log.warning(message)
    if "abbr" in config.markdown_extensions:
        config.mdx_configs.setdefault("abbr", {})["glossary"] = _hover(docs, lang, terms)
    root = Path(config.config_file_path).resolve().parent
    files = [
        p.relative_to(root).as_posix()
        for package in PACKAGES
        if (root / package).is_dir()
        for p in (root / package).rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    _state.update(
        terms=terms, docs=docs, root=root, lang=lang, modules=conventions.python_modules(files)
    )
    return config


def checked(src_uri: str, markdown: str, where: str, lang: str) -> list[str]:
    """conventions.check_page's messages for the page, from the last build's where nothing it reads changed."""
    terms = _state["terms"]
    key = build_cache.DiskCache.digest(
        "page", src_uri, markdown, where, lang, [dataclasses.astuple(t) for t in terms]
    )
    if (messages := _checked.get(key)) is None:
        messages = conventions.check_page(src_uri, markdown, where, terms, lang)
        _checked.put(key, messages)
    return messages


def on_page_markdown(markdown, page, config, files):
    src_uri = page.file.src_uri
    if page.file.generated_by:
        return markdown
    docs, root, lang = _state["docs"], _state["root"], _state["lang"]
    where = (docs / src_uri).relative_to(root).as_posix() if docs.is_relative_to(root) else src_uri
    # In another edition, a page that is not translated is the English page, checked in the English build.
    translated = lang == editions.DEFAULT or src_uri != editions.english_of(src_uri)
    if translated:
        for message in checked(src_uri, markdown, where, lang):
            log.warning(message)
    if MODULES_MARKER in markdown:
        if lang == editions.DEFAULT:
            listing = "\n\n".join(f"::: {module}" for module in _state["modules"])
        else:
            here = page.url if page.url.endswith("/") else posixpath.dirname(page.url) + "/"
            listing = API_IN_ENGLISH.format(url=posixpath.relpath("reference/", here) + "/")
        markdown = markdown.replace(MODULES_MARKER, listing)
    return markdown


def on_page_content(html, page, config, files):
    folder = _state["docs"] / "assets" / "figures"
    lang = _state["lang"]

    def read_svg(name):
        # The edition's own drawing (its labels translated) where there is one, else the English one.
        names = (
            [f"{name}.svg"] if lang == editions.DEFAULT else [f"{name}.{lang}.svg", f"{name}.svg"]
        )
        for path in (folder / n for n in names):
            if path.is_file():
                return path.read_text(encoding="utf-8")
        return None

    html, missing = conventions.inline_figures(html, read_svg)
    html = conventions.first_abbr_only(html)
    for src in missing:
        log.warning(f"{page.file.src_uri}: figure {src} is not in docs/assets/figures/")
    return html


def on_shutdown():
    _checked.save()
