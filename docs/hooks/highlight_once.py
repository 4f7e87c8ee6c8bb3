"""MkDocs hook: each code block is highlighted once, not once per edition, and not again until it changes.

The zh-Hant edition's code blocks are the English page's, byte for byte and in the same order (docs/hooks/editions.py
holds them so), and mkdocs-static-i18n builds that edition in a second build of the same process, so Pygments would
colour every quoted listing twice. This wraps pymdownx.highlight's Highlight.highlight with a cache keyed on
everything its output depends on: the block's text and arguments (its place on the page included, which names its
line anchors) and the highlighter's settings. A block's title is kept in the page's Markdown stash, whose
placeholder differs from page to page: it is stored again on every hit.

The cache is also kept on disk, in .cache/highlight.json (build_cache.py), so the next build colours only the
blocks that changed: colouring the book's 1,300 blocks (quoted listings, source pages, the API reference's sources)
was about a third of a build. A new Pygments or pymdownx-extensions starts it afresh.

on_startup    wrap the highlighter (once per process; `mkdocs serve` calls it once)
on_config     read the stored blocks (once per process)
on_pre_build  at the English build, keep only the blocks the previous run used, so `mkdocs serve` does not grow
on_shutdown   write the blocks this run used
"""

from __future__ import annotations

import functools

import pygments
import pymdownx
from build_cache import DiskCache, kept_across_builds
from pymdownx import highlight as pymdownx_highlight

MARK = "\x00agentloop-title\x00"
# digest of a block's key -> [its HTML with its titles marked, the titles]
_blocks = DiskCache(
    "highlight", f"agentloop 1, pygments {pygments.__version__}, pymdownx {pymdownx.__version__}"
)


def _settings(highlighter) -> tuple:
    # Every setting but the Markdown instance, which is the page's (used only for the title's stash).
    return tuple(sorted((k, repr(v)) for k, v in vars(highlighter).items() if k != "md"))


def _cached(original):
    @functools.wraps(original)
    def highlight(self, src, language, *args, **kwargs):
        key = DiskCache.digest(_settings(self), src, language, args, sorted(kwargs.items()))
        stash = self.md.htmlStash
        if (hit := _blocks.get(key)) is not None:
            out, titles = hit
            for title in titles:
                out = out.replace(MARK, stash.store(title), 1)
            return out
        first = stash.html_counter
        out = original(self, src, language, *args, **kwargs)
        stored = range(first, stash.html_counter)
        placeholders = [stash.get_placeholder(i) for i in stored]
        where = [out.find(p) for p in placeholders]
        titles = [stash.rawHtmlBlocks[i] for i in stored]
        # Kept only when the block and each stored title are text (an inline block is an element) and each title
        # appears once, in the order stored: then a hit can store them again.
        if (
            isinstance(out, str)
            and all(isinstance(t, str) for t in titles)
            and all(out.count(p) == 1 for p in placeholders)
            and where == sorted(where)
        ):
            marked = out
            for p in placeholders:
                marked = marked.replace(p, MARK, 1)
            _blocks.put(key, [marked, titles])
        return out

    return highlight


def on_startup(command, dirty):
    # The highlighter wrapped around pymdownx's own, with this module's cache (a hook loaded again wraps anew).
    highlighter = pymdownx_highlight.Highlight
    own = getattr(highlighter.highlight, "__wrapped__", highlighter.highlight)
    highlighter.highlight = _cached(own)


on_config, on_pre_build, on_shutdown = kept_across_builds(_blocks)
