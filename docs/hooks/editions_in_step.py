"""MkDocs hook that keeps the editions in step (the comparison itself is docs/hooks/editions.py).

on_files           once per build, in the English edition's build: every page of the navigation has its
                   zh-Hant page, or is listed in mkdocs.yml under `extra.untranslated` (a list that must shrink
                   to empty; a listed page that is translated fails too); a translation's kept parts (quotes, code,
                   panels, links, headings, tabs, exercises) are the English page's, in the zh-Hant page and in
                   the zh-Hans page generated from it; a zh-Hant page without an English page fails, and so
                   does a committed zh-Hans page (that edition is made at build time: zh_hans_pages.py).
                   Each failure is a warning, so the strict build stops and names the page.
                   A stale translation (its English page changed after its `source_blob`) is reported, listing
                   the pages, and does not fail the build: an English correction must not wait for a translator,
                   and whatever a reader could be misled by (code, panels, numbers of exercises, headings, links)
                   is held to the English page by the check above whether or not the page is stale.
on_nav             in a Chinese build (zh-Hant, zh-Hans), a translated page's navigation title is its own title
                   (its `# ` line, without the anchor and the English in parentheses beside a term), so the
                   two cannot disagree; mkdocs.yml's nav_translations name the pages not translated yet.
on_page_markdown   on a Chinese page, a short note under the title (converted on a zh-Hans page): its English
                   page changed since the translation (stale), or the page is not translated yet (the English
                   text is shown). A page not translated yet is kept out of search in a Chinese build: the
                   one search index of the site has its English text already, from the English build (it is
                   the costliest step of a page).
on_post_build      in a Chinese build, the edition's own sitemap.xml: Material's instant navigation fetches
                   sitemap.xml under the edition's root (/zh-Hant/sitemap.xml), which the plugin does not write;
                   it is the site's sitemap with each entry's address and its zh-Hant alternate swapped.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it
from mkdocs.plugins import event_priority, get_plugin_logger

log = get_plugin_logger("editions")

_state: dict = {"stale": set(), "untranslated": set()}

STALE_NOTE = (
    '!!! warning "英文原文已更新"\n\n'
    '    這一頁翻譯之後，它的<a href="{url}" hreflang="en">英文原文</a>改過了；在譯文跟上之前，兩者可能有出入。\n'
)
UNTRANSLATED_NOTE = '!!! note "尚未翻譯"\n\n    這一頁還沒有中文版，以下是英文原文。\n'


def nav_pages(nav) -> list[str]:
    """The docs/ paths of every page in mkdocs.yml's nav, in order."""
    out: list[str] = []
    for item in nav or []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                out.extend(nav_pages(value) if isinstance(value, list) else [value])
    return [p for p in out if isinstance(p, str) and p.endswith(".md")]


def check(docs: Path, pages: list[str], untranslated: list[str]) -> tuple[list[str], list[str]]:
    """(errors, stale pages) for the English `pages` of docs/ and the editions beside them: the zh-Hant pages
    written, and the zh-Hans pages generated from them (a conversion that changed a kept part fails here)."""
    errors: list[str] = []
    stale: list[str] = []
    lang = editions.LANG
    for name in untranslated:
        if name not in pages:
            errors.append(
                f"extra.untranslated.{lang} lists {name}, which is no page of the navigation"
            )
    for name in pages:
        english = docs / name
        translated = editions.translation_of(english)
        shown = f"docs/{posixpath.join(posixpath.dirname(name), translated.name)}"
        if not translated.exists():
            if name not in untranslated:
                errors.append(
                    f"docs/{name} has no {lang} page: write {shown} or list {name} under "
                    f"extra.untranslated.{lang} in mkdocs.yml"
                )
            continue
        if name in untranslated:
            errors.append(
                f"{shown} exists: remove {name} from extra.untranslated.{lang} in mkdocs.yml"
            )
        english_text = english.read_text(encoding="utf-8")
        for edition in editions.LANGS:
            page = editions.translation_of(english, edition)
            where = f"docs/{posixpath.join(posixpath.dirname(name), page.name)}"
            if edition in editions.GENERATED:
                where += f" (generated from {shown})"
            for problem in editions.differences(english_text, editions.read(page)):
                errors.append(f"{where} is not in step with docs/{name}: {problem}")
        if "source_blob" in editions.front_matter(translated.read_text(encoding="utf-8")):
            if editions.stale(english):
                stale.append(name)
    for edition in editions.LANGS:
        for translated in sorted(docs.rglob(f"*.{edition}.md")):
            shown = f"docs/{translated.relative_to(docs).as_posix()}"
            if edition in editions.GENERATED:
                errors.append(
                    f"{shown} is made at build time from its {editions.GENERATED[edition]} page: "
                    "remove the file"
                )
                continue
            name = editions.english_of(translated.relative_to(docs).as_posix())
            if name not in pages:
                errors.append(f"{shown} translates no page of the book")
    return errors, stale


def on_files(files, config):
    if editions.edition(config) != editions.DEFAULT:
        return files  # checked once, in the English build of this run
    docs = Path(config.docs_dir)
    untranslated = list((config.extra.get("untranslated") or {}).get(editions.LANG) or [])
    errors, stale = check(docs, nav_pages(config.nav), untranslated)
    for message in errors:
        log.warning(message)
    if stale:
        log.info(
            f"{len(stale)} {editions.LANG} page(s) follow an older English page (stale: "
            "`python docs/hooks/editions.py docs/PAGE` says what to bring over): "
            + ", ".join(stale)
        )
    _state.update(stale=set(stale), untranslated=set(untranslated))
    return files


# An English term beside its Chinese at first use, 「上下文（context）」: kept out of a navigation title.
ENGLISH_BESIDE = re.compile(r"（[^）]*[A-Za-z][^）]*）")


def nav_title(text: str) -> str | None:
    """The navigation title of a translated page: its `# ` line without the `{#id}` and the English beside a
    term."""
    for line in editions.FRONT_MATTER.sub("", text).splitlines():
        if line.startswith("# "):
            title = re.sub(r"\s*\{#[^}]*\}\s*$", "", line[2:]).strip()
            return ENGLISH_BESIDE.sub("", title).strip() or None
    return None


@event_priority(-150)  # after mkdocs-static-i18n's nav_translations (-100)
def on_nav(nav, config, files):
    if editions.edition(config) == editions.DEFAULT:
        return nav
    for page in nav.pages:
        if page.file.src_uri != editions.english_of(page.file.src_uri):
            title = nav_title(editions.read(Path(config.docs_dir) / page.file.src_uri))
            if title:
                page.title = title
    return nav


def on_page_markdown(markdown, page, config, files):
    if editions.edition(config) == editions.DEFAULT or page.file.generated_by:
        return markdown
    src_uri = page.file.src_uri
    english = editions.english_of(src_uri)
    if src_uri == english:
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
        note = UNTRANSLATED_NOTE if english in _state["untranslated"] else None
    elif english in _state["stale"]:
        here = page.url if page.url.endswith("/") else posixpath.dirname(page.url) + "/"
        # An HTML link: a Markdown one to a page of the other edition is no page of this build.
        target = "" if english == "index.md" else english.removesuffix(".md") + "/"
        note = STALE_NOTE.format(url=posixpath.relpath(target or ".", here) + "/")
    else:
        note = None
    if note is None:
        return markdown
    if editions.edition(config) in editions.GENERATED:
        note = editions.converter().convert_markdown(note)
    lines = markdown.split("\n")
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    lines.insert(title + 1, "\n" + note)
    return "\n".join(lines)


# One <url> entry of the site's sitemap: its <loc>, then its alternates (hreflang, href).
SITEMAP_LOC = re.compile(r"<loc>([^<]*)</loc>")


def edition_sitemap(sitemap: str, lang: str) -> str:
    """The site's sitemap as seen from the `lang` edition: each entry's <loc> is its `lang` alternate."""

    def entry(match: re.Match) -> str:
        url = match.group(0)
        alternate = re.search(rf'hreflang="{re.escape(lang)}" href="([^"]*)"', url)
        return SITEMAP_LOC.sub(f"<loc>{alternate.group(1)}</loc>", url) if alternate else url

    return re.sub(r"<url>.*?</url>", entry, sitemap, flags=re.S)


def on_post_build(config):
    if editions.edition(config) == editions.DEFAULT:
        return
    site, lang = (
        Path(config.site_dir),
        editions.edition(config),
    )  # one site_dir: the plugin prefixes paths
    root_sitemap = site / "sitemap.xml"  # the plugin's, every page with its alternates
    if root_sitemap.is_file() and (site / lang).is_dir():
        text = edition_sitemap(root_sitemap.read_text(encoding="utf-8"), lang)
        (site / lang / "sitemap.xml").write_text(text, encoding="utf-8")
