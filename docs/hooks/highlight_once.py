"""MkDocs hook: each code block is highlighted once per run of `mkdocs build` or `serve`, not once per edition.

The zh-Hant edition's code blocks are the English page's, byte for byte and in the same order (docs/hooks/editions.py
holds them so), and mkdocs-static-i18n builds that edition in a second build of the same process, so Pygments would
colour every quoted listing twice. This wraps pymdownx.highlight's Highlight.highlight with a cache keyed on
everything its output depends on: the block's text and arguments (its place on the page included, which names its
line anchors) and the highlighter's settings. A block's title is kept in the page's Markdown stash, whose
placeholder differs from page to page: it is stored again on every hit.

on_startup    wrap the highlighter (once per process)
on_pre_build  empty the cache at the English build, so `mkdocs serve` keeps only the current run's blocks
"""

from __future__ import annotations

import functools

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it
from pymdownx import highlight as pymdownx_highlight

MARK = "\x00agentloop-title\x00"
_cache: dict = {}


def _settings(highlighter) -> tuple:
    # Every setting but the Markdown instance, which is the page's (used only for the title's stash).
    return tuple(sorted((k, repr(v)) for k, v in vars(highlighter).items() if k != "md"))


def _cached(original):
    @functools.wraps(original)
    def highlight(self, src, language, *args, **kwargs):
        key = (_settings(self), src, language, args, repr(sorted(kwargs.items())))
        stash = self.md.htmlStash
        if key in _cache:
            out, titles = _cache[key]
            for title in titles:
                out = out.replace(MARK, stash.store(title), 1)
            return out
        first = stash.html_counter
        out = original(self, src, language, *args, **kwargs)
        stored = range(first, stash.html_counter)
        placeholders = [stash.get_placeholder(i) for i in stored]
        where = [out.find(p) for p in placeholders]
        # Kept only when each stored title appears once, in the order stored: then a hit can store them again.
        if all(out.count(p) == 1 for p in placeholders) and where == sorted(where):
            marked = out
            for p in placeholders:
                marked = marked.replace(p, MARK, 1)
            _cache[key] = (marked, [stash.rawHtmlBlocks[i] for i in stored])
        return out

    highlight.agentloop_cached = True
    return highlight


def on_startup(command, dirty):
    highlighter = pymdownx_highlight.Highlight
    if not getattr(highlighter.highlight, "agentloop_cached", False):
        highlighter.highlight = _cached(highlighter.highlight)


def on_pre_build(config):
    if editions.edition(config) == editions.DEFAULT:
        _cache.clear()
