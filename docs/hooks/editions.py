"""The two editions in step: what a translated page must keep of the English page it follows.

A translation (`05-tools.zh-Hant.md` beside `05-tools.md`) changes the prose and nothing else. This module
lists the parts that must stay identical — live code quotes, code blocks, HTML lines (panels), link targets,
images, headings (level and anchor id), tabs, exercises — and compares them, so the build can refuse a page
that drifted. It also reads the translation's `source_blob` (the git blob hash of the English file it was
written from), so a translation whose English page changed since is reported as stale.

The zh-Hans edition is not written: its pages are the zh-Hant ones through agentloop/zh_hans.py, made at build
time (docs/hooks/zh_hans_pages.py), and held to the same kept parts, so a conversion that touched one fails too.

Run on one page: `python docs/hooks/editions.py docs/chapters/05-tools.md` prints what differs, else OK.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown.extensions.toc import slugify

LANG = "zh-Hant"  # the translated edition, written by hand
# The editions made from another one at build time, never committed: zh-Hans from zh-Hant.
GENERATED = {"zh-Hans": LANG}
LANGS = (LANG, *GENERATED)  # every edition beside the English
DEFAULT = "en"  # the edition every other one follows, built at the site's root
FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)
FENCE = re.compile(r"^(\s*)(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{#([^}\s]+)[^}]*\})?\s*$")
LINK_TARGET = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
TAB = re.compile(r"^\s*=== ")
EXERCISE_ANSWER = re.compile(r"^\s*\?\?\?\+? note ")
HTML_LINE = re.compile(r"^\s*</?[a-zA-Z][^>]*>")


def translation_of(english: Path, lang: str = LANG) -> Path:
    """docs/chapters/05-tools.md -> docs/chapters/05-tools.zh-Hant.md (or .zh-Hans.md)"""
    return english.with_name(f"{english.stem}.{lang}.md")


def english_of(src_uri: str) -> str:
    """chapters/05-tools.zh-Hant.md -> chapters/05-tools.md (an English path is itself)."""
    for lang in LANGS:
        suffix = f".{lang}.md"
        if src_uri.endswith(suffix):
            return src_uri[: -len(suffix)] + ".md"
    return src_uri


def lang_of(src_uri: str) -> str:
    """The edition a page's path names: chapters/05-tools.zh-Hans.md -> zh-Hans."""
    return next((lang for lang in LANGS if src_uri.endswith(f".{lang}.md")), DEFAULT)


def converter():
    """agentloop/zh_hans.py (zh-Hant to zh-Hans), loaded from this checkout: the installed agentloop may be
    another checkout's."""
    name = "agentloop_book_zh_hans"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "agentloop" / "zh_hans.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_generated: dict[str, str] = {}


def read(path: Path) -> str:
    """A page's text: the file, or for a generated edition's page (05-tools.zh-Hans.md, no file), its source
    page (05-tools.zh-Hant.md) converted. Converted once per source text."""
    for lang, source_lang in GENERATED.items():
        suffix = f".{lang}.md"
        if path.name.endswith(suffix) and not path.is_file():
            source = path.with_name(path.name[: -len(suffix)] + f".{source_lang}.md")
            text = source.read_text(encoding="utf-8")
            if text not in _generated:
                _generated[text] = converter().convert_markdown(text)
            return _generated[text]
    return path.read_text(encoding="utf-8")


def edition(config) -> str:
    """The edition MkDocs is building now. mkdocs-static-i18n builds the English one, then runs the whole
    build again for each other language with its `current_language` set; without the plugin, English."""
    i18n = config.plugins.get("i18n") if config is not None else None
    return getattr(i18n, "current_language", None) or DEFAULT


def git_blob(data: bytes) -> str:
    """The hash `git hash-object` prints for a file of these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def front_matter(text: str) -> dict[str, str]:
    match = FRONT_MATTER.match(text)
    if not match:
        return {}
    pairs = (line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


@dataclass
class Parts:
    """What a page keeps in both editions, in order of appearance."""

    quotes: list[str]
    code: list[str]
    html: list[str]
    links: list[str]
    headings: list[tuple[int, str]]  # (level, anchor id)
    tabs: int
    answers: int


def parts(text: str) -> Parts:
    text = FRONT_MATTER.sub("", text)
    found = Parts([], [], [], [], [], 0, 0)
    fence: str | None = None
    block: list[str] = []
    for line in text.splitlines():
        opener = FENCE.match(line)
        if fence is not None:  # inside a code block: its every line is code
            block.append(line.strip())
            if opener and opener.group(2) == fence:
                found.code.append("\n".join(block))
                fence, block = None, []
            continue
        if opener:
            fence, block = opener.group(2), [line.strip()]
            continue
        stripped = line.strip()
        if stripped.startswith("::: "):
            found.quotes.append(stripped)
        elif HTML_LINE.match(line):
            found.html.append(stripped)
        if heading := HEADING.match(line):
            level, title, anchor = heading.groups()
            found.headings.append((len(level), anchor or slugify(title, "-")))
        found.tabs += bool(TAB.match(line))
        found.answers += bool(EXERCISE_ANSWER.match(line))
        found.links += LINK_TARGET.findall(line)
    return found


def differences(english_text: str, translated_text: str) -> list[str]:
    """Each way the translation's kept parts differ from the English page's; empty when in step."""
    english, translated = parts(english_text), parts(translated_text)
    problems = []
    for name in ("quotes", "code", "html", "links", "headings"):
        ours, theirs = getattr(english, name), getattr(translated, name)
        if ours != theirs:
            missing = [x for x in ours if x not in theirs]
            extra = [x for x in theirs if x not in ours]
            detail = f"missing {missing[:3]}" if missing else ""
            detail += f"{'; ' if detail else ''}not in English {extra[:3]}" if extra else ""
            problems.append(
                f"{name} differ ({len(ours)} in English, {len(theirs)} here): {detail or 'order'}"
            )
    for name in ("tabs", "answers"):
        if getattr(english, name) != getattr(translated, name):
            problems.append(
                f"{name}: {getattr(english, name)} in English, {getattr(translated, name)} here"
            )
    if "source_blob" not in front_matter(translated_text):
        problems.append("no source_blob in the front matter")
    return problems


def stale(english: Path) -> bool:
    """True when the English page changed after the translation was written from it (the zh-Hans page, made
    from the zh-Hant one, carries its source_blob and is stale with it)."""
    recorded = front_matter(translation_of(english).read_text(encoding="utf-8")).get("source_blob")
    return recorded != git_blob(english.read_bytes())


def main(argv: list[str]) -> int:
    status = 0
    for name, lang in ((n, lang) for n in argv for lang in LANGS):
        english = Path(name)
        translated = translation_of(english, lang)
        if not translation_of(english).exists():
            print(f"{english}: no {translated.name}")
            status = 1
            continue
        problems = differences(english.read_text(encoding="utf-8"), read(translated))
        if lang == LANG and stale(english):
            problems.append("stale: source_blob is not the English file's `git hash-object`")
        for problem in problems:
            print(f"{translated}: {problem}")
        status |= bool(problems)
        if not problems:
            print(f"{translated}: OK")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
