"""MkDocs hook: each page is indexed for search once, and again only when it changes; and cheaply when it does.

Material's search plugin feeds every page's HTML to an html.parser.HTMLParser, keeps only headings, paragraphs,
lists, `pre` and `code`, and the text, and cuts each Chinese run into words with jieba. A quoted listing is nine
tags in ten of the book's HTML: every line has a line-anchor span and link (`line_spans`, `anchor_linenums`), every
token a Pygments span, and the line-number column repeats the same again inside a `linenodiv`, which the parser
skips but still walks. Walking them was most of `mkdocs build --strict` (about 50 of 76 s under cProfile, three
editions, 2026-12-05).

lean()   inside a `<pre>`, remove `<span>` and `<a>` tags and keep every character of text: the parser keeps
         neither tag, no heading sits inside a `<pre>`, and the tags it keeps there (`code`) have no span or link
         around them, so the entries are the same (tests/test_book.py compares the two parses on every built page).
         The pages themselves are untouched: only what the search parser is fed changes.
A page's entries are also kept in .cache/search.json (build_cache.py), keyed by everything they are made from (its
HTML, address, table of contents, title and front matter, and the plugin's settings), so the next build parses and
segments only the pages that changed. A new Material or jieba starts it afresh.

on_startup    wrap the search plugin's Parser.feed and SearchIndex.add_entry_from_context (once per process)
on_config     read the stored entries (once per process)
on_pre_build  at the English build, keep only the entries the previous run used
on_shutdown   write the entries this run used
"""

from __future__ import annotations

import copy
import functools
import re
from importlib.metadata import version

from build_cache import DiskCache, kept_across_builds
from material.plugins.search import plugin as search_plugin

PRE = re.compile(r"<pre\b[^>]*>.*?</pre>", re.S)
# Inside a <pre> the text is escaped (&lt;), so every "<span" or "<a " here is a tag.
COLOUR_AND_ANCHORS = re.compile(r"</?(?:span|a)\b[^>]*>")
JIEBA = version("jieba") if search_plugin.jieba else "none"
_pages = DiskCache(
    "search", f"agentloop 1, mkdocs-material {version('mkdocs-material')}, jieba {JIEBA}"
)


def lean(html: str) -> str:
    """The page's HTML with the span and link tags inside each <pre> removed, text kept byte for byte."""
    return PRE.sub(lambda m: COLOUR_AND_ANCHORS.sub("", m.group(0)), html)


def _toc(items) -> list:
    return [(item.id, item.url, item.title, _toc(item.children)) for item in items]


def _page_key(index, page) -> str:
    """The digest of everything SearchIndex.add_entry_from_context reads of the page and of the plugin."""
    return DiskCache.digest(
        page.content,
        page.url,
        page.title,
        sorted((k, repr(v)) for k, v in page.meta.items()),
        _toc(page.toc),
        sorted((k, repr(v)) for k, v in index.config.items()),
    )


def _leaned(feed):
    @functools.wraps(feed)
    def lean_feed(self, data):
        return feed(self, lean(data))

    return lean_feed


def _once(add_entry_from_context):
    @functools.wraps(add_entry_from_context)
    def add_page(self, page):
        key = _page_key(self, page)
        if (entries := _pages.get(key)) is None:
            first = len(self.entries)
            add_entry_from_context(self, page)
            entries = copy.deepcopy(self.entries[first:])
            _pages.put(key, entries)
        else:
            self.entries.extend(copy.deepcopy(entries))

    return add_page


def on_startup(command, dirty):
    # Wrapped around the plugin's own, with this module's cache (a hook loaded again wraps anew).
    parser, index = search_plugin.Parser, search_plugin.SearchIndex
    parser.feed = _leaned(getattr(parser.feed, "__wrapped__", parser.feed))
    own = index.add_entry_from_context
    index.add_entry_from_context = _once(getattr(own, "__wrapped__", own))


on_config, on_pre_build, on_shutdown = kept_across_builds(_pages)
