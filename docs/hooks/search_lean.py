"""MkDocs hook: the search plugin reads each code listing's text without the tags that colour and number its lines.

Material's search plugin feeds every page's HTML to an html.parser.HTMLParser and keeps only headings, paragraphs,
lists, `pre` and `code`, and the text. A quoted listing is nine tags in ten of the book's HTML: every line has a
line-anchor span and link (`line_spans`, `anchor_linenums`), every token a Pygments span, and the line-number column
repeats the same again inside a `linenodiv`, which the parser skips but still walks. Walking them was most of
`mkdocs build --strict` (about 50 of 76 s under cProfile, three editions, 2026-12-05).

Inside a `<pre>` this removes `<span>` and `<a>` tags and keeps every character of text: the parser keeps neither
tag, no heading sits inside a `<pre>`, and the tags it keeps there (`code`) have no span or link around them, so the
sections, titles and texts it builds are the same (tests/test_book.py compares the two parses on every built page).
The pages themselves are untouched: only what the search parser is fed changes.

on_startup  wrap the search plugin's Parser.feed (once per process)
"""

from __future__ import annotations

import functools
import re

from material.plugins.search import plugin as search_plugin

PRE = re.compile(r"<pre\b[^>]*>.*?</pre>", re.S)
# Inside a <pre> the text is escaped (&lt;), so every "<span" or "<a " here is a tag.
COLOUR_AND_ANCHORS = re.compile(r"</?(?:span|a)\b[^>]*>")


def lean(html: str) -> str:
    """The page's HTML with the span and link tags inside each <pre> removed, text kept byte for byte."""
    return PRE.sub(lambda m: COLOUR_AND_ANCHORS.sub("", m.group(0)), html)


def _leaned(original):
    @functools.wraps(original)
    def feed(self, data):
        return original(self, lean(data))

    feed.agentloop_lean = True
    return feed


def on_startup(command, dirty):
    parser = search_plugin.Parser
    if not getattr(parser.feed, "agentloop_lean", False):
        parser.feed = _leaned(parser.feed)
