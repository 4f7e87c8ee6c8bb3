"""The book's teaching conventions, as plain functions over Markdown (no MkDocs import); docs/hooks/book.py runs them
in the strict build, and tests/test_book.py calls them on bad pages.

What a chapter (docs/chapters/NN-name.md) follows:

1. A reference to another chapter is a link: `[chapter 8](08-prefill-decode.md)`, and for several,
   `chapters [2](02-model-families.md) and [3](03-model-folder.md)`. A plain "chapter 8" fails the build.
2. It shows at least one figure: an image of an SVG in docs/assets/figures/,
   `![What the figure shows](../assets/figures/NAME.svg)` on a line of its own. The build inlines the SVG so
   that it takes the page's colours (write its text in `currentColor`, or draw it with scripts/figures.py).
3. It ends with `## Exercises`, its last `##` section, holding 3 to 5 numbered items (`1. ` at the start of a
   line). An answer is folded away under its item, indented: `??? note "Answer"`.
4. A term of the glossary (docs/glossary.md) that appears in a chapter before the chapter that explains it is a
   link to its glossary entry where it first appears on that page: `[KV cache](../glossary.md#kv-cache)`.
   Every appearance shows the entry's first sentence on hover (the abbr extension, fed by `glossary_terms`).

A glossary entry is a `## Term {#id}` heading; the paragraph after it starts with
`Explained in [chapter N](chapters/NN-….md#…).` and may name other spellings: `Also: terms, Term.`;
the next paragraph is the definition, whose first sentence is the hover text.

A chapter that is still an outline (it holds `!!! note "Outline"`) is held to rule 1 only.

A page of the zh-Hant edition (`05-tools.zh-Hant.md`, checked with lang="zh-Hant") is held to the same rules,
read in Chinese: rule 1 also catches a plain 「第 8 章」 (write `[第 8 章](08-prefill-decode.md)`); rule 3's
section is the one whose heading keeps the English id, `## 練習 {#exercises}`. Rule 4 is not matched again in
Chinese text, which has no spaces between words (「取樣」 is inside 「取樣設定」): its glossary links are the
English page's, in the same order, which docs/hooks/editions.py requires of every translation. The zh-Hant
glossary (glossary.zh-Hant.md) is read like the English one; its entries' first paragraph names the chapter by a
link to it (`[第 9 章](chapters/09-sampling.md#…)`), a heading 「取樣（sampling）」 gives both spellings, and
others follow 「又稱：」.
"""

from __future__ import annotations

import html
import posixpath
import re
from dataclasses import dataclass, field

import markdown as python_markdown

CHAPTER_FILE = re.compile(r"^chapters/(?P<n>\d\d)-[\w-]+\.md$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"!?\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]*)(?:\s+\"[^\"]*\")?\)")
HTML_TAG = re.compile(r"<[^>\n]*>")
# "chapter 8", "Chapters 8 and 9", "chapter 10's": the word, then a number where a link should be.
PLAIN_CHAPTER = re.compile(r"\b[Cc]hapters?\s+(?:\d+|\x00(?:,\s*|\s+(?:and|or|to)\s+)\d+)")
# 「第 8 章」: the Chinese for "chapter 8", where a link should be (「第 [8](08-….md) 章」 is one).
PLAIN_CHAPTER_ZH = re.compile(r"第\s*\d+\s*章")
ZH = (
    "zh-Hant",
    "zh-Hans",
)  # the Chinese editions: zh-Hans is zh-Hant converted, held to the same rules
FIGURE = re.compile(r"^\s*!\[[^\]]+\]\((?:\.\./)*assets/figures/[\w.-]+\.svg\)\s*$", re.M)
GLOSSARY_HEADING = re.compile(r"^## (?P<term>.+?) \{#(?P<id>[\w-]+)\}\s*$")
EXPLAINED = re.compile(r"Explained in \[chapter (?P<n>\d+)\]\(")
# In the zh-Hant glossary, the first link to a chapter names it, whatever the words around it.
EXPLAINED_BY_LINK = re.compile(r"\]\((?:\.\./)?chapters/(?P<n>\d\d)-")
OUTLINE = '!!! note "Outline"'
ALSO = re.compile(r"(?:Also: |(?:又稱|又作)[：:]\s*)(?P<forms>[^.。]+)[.。]")
# A zh-Hant entry's heading names the term both ways, 「代理迴圈（agent loop）」: each is a spelling.
BOTH_WAYS = re.compile(r"^(?P<zh>[^（]+?)\s*（(?P<en>[^）]+)）$")


@dataclass
class Term:
    term: str
    id: str
    chapter: int
    forms: list[str] = field(default_factory=list)  # every spelling, the heading's first
    definition: str = ""  # the first sentence, as plain text


def chapter_number(src_uri: str) -> int | None:
    m = CHAPTER_FILE.match(src_uri)
    return int(m["n"]) if m else None


def prose_lines(markdown: str):
    """(line number, text) for every line outside code fences, with inline code blanked out."""
    fence = None
    for number, line in enumerate(markdown.split("\n"), start=1):
        m = FENCE.match(line)
        if fence:
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence):
                fence = None
            continue
        if m:
            fence = m[1]
            continue
        yield number, CODE_SPAN.sub(lambda c: " " * len(c[0]), line)


def plain_text(markdown: str) -> str:
    """A definition as hover text: the text a reader sees on the glossary page, without its marks (links to
    their text, code without its backticks, no emphasis). Rendered by Markdown, not stripped of `*` and `_`
    by hand: those belong to the text inside code (`<|im_end|>`, `run_python`)."""
    rendered = python_markdown.markdown(markdown)
    return html.unescape(re.sub(r"<[^>]*>", "", rendered)).strip()


def parse_glossary(markdown: str, where: str = "docs/glossary.md") -> tuple[list[Term], list[str]]:
    terms: list[Term] = []
    errors: list[str] = []
    blocks = re.split(r"\n(?=## )", markdown)
    for block in blocks:
        lines = block.strip("\n").split("\n")
        m = GLOSSARY_HEADING.match(lines[0])
        if not m:
            continue
        paragraphs = [p.strip().replace("\n", " ") for p in "\n".join(lines[1:]).split("\n\n")]
        paragraphs = [p for p in paragraphs if p]
        head = paragraphs[0] if paragraphs else ""
        explained = EXPLAINED.search(head) or EXPLAINED_BY_LINK.search(head)
        if not explained or len(paragraphs) < 2:
            errors.append(
                f"{where}: entry {m['term']!r} needs 'Explained in [chapter N](…).' and a definition"
            )
            continue
        also = ALSO.search(head)
        both = BOTH_WAYS.match(m["term"])
        forms = [both["zh"], both["en"]] if both else [m["term"]]
        if also:
            forms += [f.strip() for f in re.split(r"[,，、]", also["forms"])]
        first = re.split(r"(?<=[.!?])\s|(?<=[。！？])", plain_text(paragraphs[1]), maxsplit=1)[0]
        terms.append(Term(m["term"], m["id"], int(explained["n"]), forms, first))
    return terms, errors


def glossary_terms(terms: list[Term]) -> dict[str, str]:
    """Every spelling -> its hover text, for the abbr extension's glossary."""
    return {form: term.definition for term in terms for form in term.forms}


def _masked(line: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The line with each link replaced by NUL characters of its length, and the links' spans and targets."""
    links = [(m.start(), m.end(), m["target"]) for m in LINK.finditer(line)]
    out = list(line)
    for a, b, _ in links:
        out[a:b] = "\x00" * (b - a)
    return "".join(out), links


def plain_chapter_references(markdown: str, where: str, lang: str = "en") -> list[str]:
    errors = []
    for number, line in prose_lines(markdown):
        masked, _ = _masked(HTML_TAG.sub(lambda t: " " * len(t[0]), line))
        # A run of NULs is one link: squeeze it so the pattern sees "chapters \0 and 9".
        squeezed = re.sub("\x00+", "\x00", masked)
        for m in PLAIN_CHAPTER.finditer(squeezed):
            errors.append(
                f"{where}:{number}: {m[0]!r} is plain text: write it as a link, "
                "e.g. [chapter 8](08-prefill-decode.md)"
            )
        if lang in ZH:
            for m in PLAIN_CHAPTER_ZH.finditer(squeezed):
                errors.append(
                    f"{where}:{number}: {m[0]!r} is plain text: write it as a link, "
                    "e.g. [第 8 章](08-prefill-decode.md)"
                )
    return errors


def _is_exercises(heading: str) -> bool:
    # The English heading, or a translation that keeps its id: `## 練習 {#exercises}`.
    heading = heading.strip()
    return heading == "## Exercises" or heading.endswith("{#exercises}")


def figure_and_exercises(markdown: str, where: str) -> list[str]:
    errors = []
    if not FIGURE.search(markdown):
        errors.append(f"{where}: no figure: add ![what it shows](../assets/figures/NAME.svg)")
    headings = [(n, line) for n, line in prose_lines(markdown) if line.startswith("## ")]
    if not headings or not _is_exercises(headings[-1][1]):
        errors.append(f"{where}: the chapter must end with a '## Exercises' section")
    else:
        start = headings[-1][0]
        body = markdown.split("\n")[start:]
        items = [line for line in body if re.match(r"^\d+\. ", line)]
        if not 3 <= len(items) <= 5:
            errors.append(f"{where}: '## Exercises' holds {len(items)} numbered items, not 3 to 5")
        for i, line in enumerate(body[1:], start=1):
            if re.match(r"^\s+\?\?\?\+? ", line) and body[i - 1].strip():
                # Without the blank line Markdown reads it as text of the item, and the answer shows.
                errors.append(f"{where}:{start + i + 1}: put a blank line before {line.strip()!r}")
    return errors


def terms_before_their_chapter(
    markdown: str, where: str, chapter: int, terms: list[Term], glossary: str = "../glossary.md"
) -> list[str]:
    """A term used here, before the chapter that explains it, must link to its entry where it first appears."""
    errors = []
    pending = [t for t in terms if t.chapter > chapter]
    patterns = {
        t.id: re.compile(
            r"(?<![\w-])(?:" + "|".join(re.escape(f) for f in t.forms) + r")(?![\w])", re.I
        )
        for t in pending
    }
    done: set[str] = set()
    for number, line in prose_lines(markdown):
        if line.lstrip().startswith(("#", "<", "*[")):
            continue  # headings, HTML (panels) and abbreviation lines are not prose to link in
        _, links = _masked(line)
        for t in pending:
            if t.id in done:
                continue
            for m in patterns[t.id].finditer(line):
                inside = [target for a, b, target in links if a <= m.start() < b]
                if inside and inside[0].endswith(f"glossary.md#{t.id}"):
                    done.add(t.id)  # linked where it first appears: the page is fine
                    break
                if inside:
                    continue  # the text of a link elsewhere (another chapter, a source line)
                errors.append(
                    f"{where}:{number}: {m[0]!r} is explained in chapter {t.chapter}: link its first use "
                    f"here to its entry, [{m[0]}]({glossary}#{t.id})"
                )
                done.add(t.id)
                break
    return errors


def check_page(
    src_uri: str, markdown: str, where: str, terms: list[Term], lang: str = "en"
) -> list[str]:
    """Every convention that applies to the page at `src_uri` (a path inside docs/), written in `lang`."""
    # A translation is held to its English page's rules.
    for zh in ZH:
        src_uri = src_uri.replace(f".{zh}.md", ".md")
    if src_uri.startswith(("assets/", "source/")) or src_uri in ("reference.md", "glossary.md"):
        return []
    errors = plain_chapter_references(markdown, where, lang)
    if OUTLINE in markdown:
        return errors
    chapter = chapter_number(src_uri)
    glossary = posixpath.relpath("glossary.md", posixpath.dirname(src_uri) or ".")
    # In Chinese, the glossary links are the English page's (see the module's docstring).
    if lang not in ZH:
        errors += terms_before_their_chapter(markdown, where, chapter or 0, terms, glossary)
    if chapter is not None:
        errors += figure_and_exercises(markdown, where)
    return errors


def python_modules(files: list[str]) -> list[str]:
    """Dotted module names of the package files (repository paths), for the API reference's page."""
    out = []
    for path in sorted(files):
        if not path.endswith(".py"):
            continue
        parts = path.removesuffix(".py").split("/")
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return sorted(out)


FIGURE_IMG = re.compile(
    r'<p>\s*<img alt="(?P<alt>[^"]*)" src="(?P<src>[^"]*assets/figures/(?P<name>[\w.-]+)\.svg)"\s*/?>\s*</p>'
)


def inline_figures(html: str, read_svg) -> tuple[str, list[str]]:
    """Put each figure's SVG into the page, so that its currentColor is the page's text colour."""
    missing = []

    def put(m: re.Match) -> str:
        svg = read_svg(m["name"])
        if svg is None:
            missing.append(m["src"])
            return m[0]
        svg = re.sub(r"^<\?xml[^>]*>\s*", "", svg)
        return (
            f'<figure class="agentloop-figure" id="figure-{m["name"]}">{svg}'
            f"<figcaption>{m['alt']}</figcaption></figure>"
        )

    return FIGURE_IMG.sub(put, html), missing


ABBR = re.compile(r'<abbr title="(?P<title>[^"]*)">(?P<text>.*?)</abbr>', re.S)
HEADING = re.compile(r"<h(?P<n>[1-6])\b.*?</h(?P=n)>", re.S)


def first_abbr_only(html: str) -> str:
    """Keep a term's hover on its first appearance in a page's text: marked everywhere, a page of common terms
    reads as underlines. Headings get none (the table of contents repeats them)."""
    html = HEADING.sub(lambda h: ABBR.sub(lambda m: m["text"], h[0]), html)
    seen: set[str] = set()

    def once(m: re.Match) -> str:
        if m["title"] in seen:
            return m["text"]
        seen.add(m["title"])
        return m[0]

    return ABBR.sub(once, html)
