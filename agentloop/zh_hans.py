"""Simplified Chinese (zh-Hans) from the book's Traditional Chinese (zh-Hant): OpenCC's Taiwan-to-mainland
phrase conversion (`tw2sp`) with the project's own table around it.

tw2sp alone turns a Taiwanese technical text into words a mainland reader would not use, or uses for
something else (序列 becomes 串行, serial; 位元 比特; 啟用 激活; the book's fixed terms 預填, 沙盒,
工作階段, 核准 stay Taiwanese).
The project's table says what each of those becomes: the zh-Hans column of docs/hooks/terms.zh-Hant.tsv (the
fixed terms) and docs/hooks/zh-Hans.overrides.tsv (other phrases, each with its reason). Each zh-Hant phrase of
the table is taken out of the text (longest first) before OpenCC sees it, held as a private-use character, and
its zh-Hans put back after, so OpenCC converts everything around it and nothing inside it.

One conversion for everything a zh-Hans reader sees: the edition's pages (docs/hooks/zh_hans_pages.py, at build
time), the panels' strings and the figures' labels (scripts/zh_hans_assets.py, scripts/figures.py), the demo
server's messages (demo_server/stream.py and demo_server/errors.py add `zh-Hans` beside each {en, zh}).

    python -m agentloop.zh_hans FILE.zh-Hant.md   # print the page as the zh-Hans edition has it
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TERMS = ROOT / "docs" / "hooks" / "terms.zh-Hant.tsv"
OVERRIDES = ROOT / "docs" / "hooks" / "zh-Hans.overrides.tsv"
# The private-use characters: a held phrase's place while OpenCC runs.
HOLD, LAST_HOLD = 0xE000, 0xF8FF
PRIVATE_USE = re.compile("([\ue000-\uf8ff])")

# In a prose line, what stays byte for byte: code spans, link targets, attribute lists and heading ids,
# inline HTML tags, addresses.
KEPT_SPAN = re.compile(r"(`[^`\n]+`|\]\([^)]*\)|\{[#:.][^}\n]*\}|<[^>\n]+>|https?://\S+)")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
HTML_LINE = re.compile(r"^\s*</?[a-zA-Z][^>]*>")
LINK_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s")
# Mainland punctuation for quotations: “” and ‘’ where Taiwan writes 「」 and 『』.
QUOTES = str.maketrans({"「": "“", "」": "”", "『": "‘", "』": "’"})


def _rows(path: Path, hant: int, hans: int) -> list[tuple[str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) <= max(hant, hans) or not cells[hant] or not cells[hans]:
            raise ValueError(f"{path.name}:{number}: needs a zh-Hant and a zh-Hans cell: {line!r}")
        rows.append((cells[hant], cells[hans]))
    return rows


@functools.cache
def _opencc():
    import opencc

    return opencc.OpenCC("tw2sp")


def opencc_only(text: str) -> str:
    """OpenCC's tw2sp alone, no table."""
    return _opencc().convert(text)


@functools.cache
def table() -> dict[str, str]:
    """zh-Hant phrase -> its zh-Hans: the terms whose zh-Hans tw2sp would not give, then the overrides (which win)."""
    held = {}
    for hant, hans in _rows(TERMS, 1, 2):
        for one, other in zip(hant.split(" / "), hans.split(" / ")):  # 錄下的執行 / 重播
            if opencc_only(one) != other:
                held[one] = other
    held.update(_rows(OVERRIDES, 0, 1))
    return held


@functools.cache
def _pattern() -> re.Pattern | None:
    phrases = sorted(table(), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, phrases))) if phrases else None


def convert(text: str) -> str:
    """Plain text (a panel string, a server message, a label) in zh-Hans, quotation marks the mainland's.
    Private-use characters already in the text (a server message may quote anything a request held) pass
    through as they are: the held phrases' places are private-use characters too."""
    if not text or not any("\u3000" <= c <= "\uffff" for c in text):
        return text
    if PRIVATE_USE.search(text):
        return "".join(p if i % 2 else convert(p) for i, p in enumerate(PRIVATE_USE.split(text)))
    held: list[str] = []

    def hold(match: re.Match) -> str:
        if len(held) > LAST_HOLD - HOLD:
            return match.group(0)  # no place left: OpenCC converts the phrase as it would alone
        held.append(table()[match.group(0)])
        return chr(HOLD + len(held) - 1)

    pattern = _pattern()
    out = opencc_only(pattern.sub(hold, text) if pattern else text)
    return PRIVATE_USE.sub(lambda m: held[ord(m.group(0)) - HOLD], out).translate(QUOTES)


def convert_prose(line: str) -> str:
    """A line of Markdown prose: its kept spans untouched, the rest converted, quotation marks mainland's."""
    pieces = KEPT_SPAN.split(line)
    return "".join(p if i % 2 else convert(p) for i, p in enumerate(pieces))


def convert_markdown(text: str) -> str:
    """A zh-Hant page as the zh-Hans edition has it. What docs/hooks/editions.py holds equal between editions
    stays byte for byte: the front matter, code blocks, `::: quote` lines, HTML lines, link targets, heading
    ids and attribute lists, code spans."""
    front = FRONT_MATTER.match(text)
    head, body = (front.group(0), text[front.end() :]) if front else ("", text)
    out, fence = [], None
    for line in body.split("\n"):
        opener = FENCE.match(line)
        if fence is not None:
            out.append(line)
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = None
            continue
        if opener:
            fence = opener.group(1)
            out.append(line)
        elif (
            line.lstrip().startswith("::: ") or HTML_LINE.match(line) or LINK_DEFINITION.match(line)
        ):
            out.append(line)
        else:
            out.append(convert_prose(line))
    return head + "\n".join(out)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        sys.stdout.write(convert_markdown(Path(name).read_text(encoding="utf-8")))
