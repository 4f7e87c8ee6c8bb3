"""MkDocs hook: the Chinese glossaries' terminology table, rendered at build time from docs/hooks/terms.zh-Hant.tsv.

The table that fixes each term's Chinese (the translators' rule) is also what a Chinese reader looks terms up in.
Rendered from the same file on every build, the page cannot drift from the words the translation uses. A page
asks for it with the line `<!-- terms table -->` (docs/glossary.zh-Hant.md does); an HTML comment, so the
editions check (docs/hooks/editions.py) sees no line the English glossary lacks. The zh-Hans glossary (generated
from the zh-Hant one) shows the table's zh-Hans column, the words its pages use, under the heading converted.
"""

from __future__ import annotations

from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it

MARKER = "<!-- terms table -->"
TSV = Path(__file__).with_name("terms.zh-Hant.tsv")
HEADING = "## 術語對照表 {#terms}"
INTRO = (
    "本書中文版的每個術語都只用一個固定的譯名，如下表；在一頁中首次出現時，譯名旁會附上英文。"
    "譯名欄仍是英文的術語，在中文版中也保留英文。"
)


COLUMN = {"zh-Hant": 1, "zh-Hans": 2}  # each edition's column of the table file


def terms(tsv: str, lang: str = "zh-Hant") -> list[tuple[str, str]]:
    """(English, Chinese in `lang`) for each line of the table file; `#` lines are its comments."""
    rows = []
    for number, line in enumerate(tsv.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) < 3 or not all(c.strip() for c in cells[:3]):
            raise ValueError(
                f"{TSV.name}:{number}: needs English<TAB>zh-Hant<TAB>zh-Hans, got {line!r}"
            )
        rows.append((cells[0].strip(), cells[COLUMN[lang]].strip()))
    return rows


def table(tsv: str, lang: str = "zh-Hant") -> str:
    """The section that replaces the marker: a heading, a sentence and a Markdown table."""
    cell = lambda s: s.replace("|", "\\|")  # noqa: E731
    lines = [HEADING, "", INTRO, "", "| English | 中文 |", "| --- | --- |"]
    if lang in editions.GENERATED:
        lines = [editions.converter().convert_prose(line) for line in lines]
    lines += [f"| {cell(en)} | {cell(zh)} |" for en, zh in terms(tsv, lang)]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    lang = editions.lang_of(page.file.src_uri)
    return markdown.replace(MARKER, table(TSV.read_text(encoding="utf-8"), lang))
