"""MkDocs hook: the zh-Hans (Simplified Chinese) edition, generated at build time from the zh-Hant pages.

No zh-Hans page is written by hand or committed: `05-tools.zh-Hans.md` is `05-tools.zh-Hant.md` through
agentloop/zh_hans.py (OpenCC's tw2sp with the project's table, every kept part byte for byte), made again on
every build (docs/hooks/editions.py's read()), so the two Chinese editions cannot drift. The zh-Hant page is the
authoritative one.

on_config    a build without the edition (its `build` off: AGENTLOOP_ZH_HANS=false, for an author who wants a
             faster build) offers no link to it in the header: Material would fetch its sitemap.xml, a 404.
on_files     (before mkdocs-static-i18n's, priority -100) adds `X.zh-Hans.md` beside each `X.zh-Hant.md` as a
             page of docs/: the plugin takes only files under docs_dir as pages of an edition. It exists only in
             memory.
on_nav       `mkdocs serve --dirty` rebuilds only the pages whose source is newer than their HTML: such a page's
             source is its zh-Hant page.
on_pre_page  gives such a page its converted text: the plugin makes a new File for each page from its path,
             and no file is behind that path.
"""

from __future__ import annotations

import os
from pathlib import Path

import editions  # docs/hooks/editions.py: MkDocs puts a hook's folder on sys.path while it loads it
from mkdocs.structure.files import File


def on_config(config):
    i18n = config.plugins.get("i18n")
    built = (
        {language.locale for language in i18n.config.languages if language.build} if i18n else set()
    )
    left_out = set(editions.GENERATED) - built
    if left_out and config.extra.get("alternate"):
        config.extra["alternate"] = [
            a for a in config.extra["alternate"] if a.get("lang") not in left_out
        ]
    return config


def generated_uri(src_uri: str, lang: str) -> str | None:
    """chapters/05-tools.zh-Hant.md -> chapters/05-tools.zh-Hans.md for lang zh-Hans; None for other files."""
    suffix = f".{editions.GENERATED[lang]}.md"
    return src_uri[: -len(suffix)] + f".{lang}.md" if src_uri.endswith(suffix) else None


def on_files(files, config):
    docs = Path(config.docs_dir)
    for lang in editions.GENERATED:
        for file in list(files):
            uri = generated_uri(file.src_uri, lang)
            if uri is None or files.get_file_from_path(uri) is not None:
                continue
            page = File.generated(
                config, uri, content=editions.read(docs / uri), inclusion=file.inclusion
            )
            page.abs_src_path = str(
                docs / uri
            )  # a page of docs/ to the plugin (on_pre_page fills it)
            files.append(page)
    return files


def on_nav(nav, config, files):
    docs = Path(config.docs_dir)
    for file in files.documentation_pages():
        lang = editions.lang_of(file.src_uri)
        if lang in editions.GENERATED and not (docs / file.src_uri).is_file():
            suffix = f".{lang}.md"
            source = docs / (file.src_uri[: -len(suffix)] + f".{editions.GENERATED[lang]}.md")
            file.is_modified = lambda file=file, source=source: (
                not os.path.isfile(file.abs_dest_path)
                or os.path.getmtime(file.abs_dest_path) < os.path.getmtime(source)
            )
    return nav


def on_pre_page(page, config, files):
    path = Path(config.docs_dir) / page.file.src_uri
    if editions.lang_of(page.file.src_uri) in editions.GENERATED and not path.is_file():
        page.file.content_string = editions.read(path)
    return page
