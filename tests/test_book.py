"""The book: the strict build passes, quotes carry the code's real line numbers, and a quote that no longer
matches the code fails the build, naming the chapter and the reference."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop import events
from scripts.book_copy import copy_book
from tests.conftest import english

ROOT = Path(__file__).resolve().parent.parent


def build(project: Path, site: Path) -> subprocess.CompletedProcess:
    """One strict build of the book in `project` into `site`, as `make book` runs it."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "AGENTLOOP_EDITION": ""}  # every edition
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(project / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def copy_project(dest: Path) -> Path:
    """The book's sources and the packages it quotes, copied so a test can break the code without touching ours; with
    our last build's cache, so the copy's build redoes only what changed."""
    return copy_book(dest, build_cache=True)


def chapter1(docs: Path) -> Path:
    (path,) = english((docs / "chapters").glob("01-*.md"))
    return path


def span_of(obj) -> tuple[int, int]:
    lines, first = inspect.getsourcelines(obj)
    return first, first + len(lines) - 1


def load_hook_module(file: str):
    """One of docs/hooks' plain-function modules, loaded by path as MkDocs loads a hook: with docs/hooks on
    sys.path while it runs, so a hook may `import editions` beside it."""
    spec = importlib.util.spec_from_file_location(
        f"book_{file.removesuffix('.py')}_under_test", ROOT / "docs/hooks" / file
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(ROOT / "docs/hooks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "docs/hooks"))
    return module


def load_quoting():
    return load_hook_module("quoting.py")


def page(site: Path, md_path: Path) -> str:
    """The built HTML of a chapter (directory URLs: chapters/01-x.md -> chapters/01-x/index.html)."""
    return (site / "chapters" / md_path.stem / "index.html").read_text(encoding="utf-8")


# (a) ---------------------------------------------------------------------------------------------------


def test_strict_build_quotes_the_real_lines(site):
    html = page(site, chapter1(ROOT / "docs"))
    first, last = span_of(events.make)
    # The listing's title names the real lines; its first line number is the real one and is anchored.
    assert f"agentloop/events.py:{first}-{last}" in html
    assert re.search(rf'href="#__codelineno-\d+-{first}"', html)
    block = html.split(f"agentloop/events.py:{first}-{last}", 1)[1].split("</table>", 1)[0]
    assert re.search(rf'href="#__codelineno-\d+-{last}"', block)
    assert not re.search(rf'href="#__codelineno-\d+-{last + 1}"', block)
    assert 'class="nf">make<' in html
    # The "source" link under it points at that line of the in-site source page, which has the anchor.
    assert f'source/agentloop/events.py/#L{first}"' in html
    source = (site / "source/agentloop/events.py/index.html").read_text(encoding="utf-8")
    assert f'id="L{first}"' in source
    check_first, _ = span_of(events.check)
    assert f'source/agentloop/events.py/#L{check_first}"' in html


def test_the_search_index_is_the_same_from_the_lean_parse(site):
    """docs/hooks/search_once.py feeds Material's search parser each page without the span and link tags inside
    its <pre> blocks: on every built page of every edition, the sections, titles and texts the index keeps are
    those of the page as built."""
    from material.plugins.search import plugin as search_plugin

    lean = load_hook_module("search_once.py").lean
    feed = getattr(search_plugin.Parser.feed, "__wrapped__", search_plugin.Parser.feed)

    def sections(html: str) -> list:
        parser = search_plugin.Parser()
        feed(parser, html)
        parser.close()
        # What the index keeps of a section (SearchIndex.create_entry_for_section): its id, title and text, joined.
        return [
            (s.id, "".join(s.title).strip(), "".join(s.text).strip(), s.is_excluded())
            for s in parser.data
        ]

    pages = sorted(site.glob("**/index.html"))
    listings = 0
    for path in pages:
        article = re.search(r"<article[^>]*>(.*)</article>", path.read_text(encoding="utf-8"), re.S)
        if article:
            html = article.group(1)
            listings += html.count('class="linenodiv"')
            assert sections(lean(html)) == sections(html), path.relative_to(site)
    assert len(pages) > 100 and listings > 300, (len(pages), listings)


def test_a_build_that_finds_the_last_builds_cache_makes_the_same_site(built_book, tmp_path):
    """.cache/ (docs/hooks/build_cache.py: highlighted blocks, pages' HTML, expanded quotes, checks, search
    entries; Jinja's bytecode) changes how long a build takes, never what it makes: a copy of the book built with
    the caches our build left gives every file of the run's own build (in CI, a build from nothing) byte for
    byte."""
    project = copy_project(tmp_path / "book")
    for cache in ("highlight", "search", "pages", "quotes", "book"):
        assert (project / f".cache/{cache}.json").is_file(), cache
    result = build(project, tmp_path / "site")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    made = {p.relative_to(tmp_path / "site") for p in (tmp_path / "site").rglob("*") if p.is_file()}
    ours = {p.relative_to(built_book) for p in built_book.rglob("*") if p.is_file()}
    assert made == ours
    differ = [
        str(p)
        for p in sorted(ours)
        if (built_book / p).read_bytes() != (tmp_path / "site" / p).read_bytes()
    ]
    assert not differ, differ[:10]


def test_what_a_page_breaks_fails_every_build_not_only_the_first(tmp_path):
    """The hooks keep each page's conversion (render_once.py), its quotes' expansion (quotes.py) and its checks
    (book.py) for the next build, in .cache/. What a page breaks must fail the strict build that follows too,
    where a kept result that forgot its warnings would hide it: a link to no page (a conversion that warns is
    not kept), a quote past the end of its file and a plain chapter reference (kept, and logged again)."""
    project = copy_project(tmp_path / "book")
    n = len((project / "agentloop/events.py").read_text(encoding="utf-8").splitlines())
    (project / FIXTURE).write_text(
        "# Fixture\n\nAs chapter 3 says, see [a page](no-such-page.md).\n\n"
        f"::: quote agentloop/events.py:{n - 1}-{n + 1}\n",
        encoding="utf-8",
    )
    broken = [
        "contains a link 'no-such-page.md', but the target 'chapters/no-such-page.md' is not found",
        f"{FIXTURE}:5: quote agentloop/events.py:{n - 1}-{n + 1}: line {n + 1} is past the end",
        f"{FIXTURE}:3: 'chapter 3' is plain text",
    ]
    for _ in range(2):
        result = build(project, tmp_path / "site")
        out = result.stdout + result.stderr
        assert result.returncode != 0, out[-3000:]
        assert [b for b in broken if b not in out] == [], out[-3000:]
    for cache in ("pages", "quotes", "book"):
        assert (project / f".cache/{cache}.json").is_file(), cache


def test_html_ids_finds_each_id_attribute_as_a_word_boundary_pattern_does(site):
    """quoting.html_ids scans for `id="` and checks the word boundary itself (a leading \\b made re try every
    position): the same ids as the plain pattern, on edge cases and on every seventh built page."""
    html_ids = load_hook_module("quoting.py").html_ids
    plain = re.compile(r'\bid="([^"]+)"')
    cases = ['id="a" x', '<p id="b" data-id="c" xid="d" _id="e" üid="f">', 'grid="g"']
    pages = [p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))[::7]]
    for html in cases + pages:
        assert html_ids(html) == set(plain.findall(html))
    assert html_ids(cases[1]) == {"b", "c"}


def test_every_module_has_a_source_page_kept_out_of_search_and_nav(site):
    for package in ("agentloop", "demo_server"):
        for file in (ROOT / package).rglob("*.py") if (ROOT / package).is_dir() else ():
            if "__pycache__" in file.parts:
                continue
            rel = file.relative_to(ROOT).as_posix()
            assert (site / "source" / rel / "index.html").is_file(), rel
    searched = json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))["docs"]
    assert searched and not [d["location"] for d in searched if d["location"].startswith("source/")]
    home = (site / "index.html").read_text(encoding="utf-8")
    assert not re.search(r'<a href="source/[^"]*" class="md-nav__link', home)


# (b) ---------------------------------------------------------------------------------------------------


def test_a_quote_of_a_renamed_function_fails_the_build(tmp_path):
    project = copy_project(tmp_path / "book")
    events_py = project / "agentloop/events.py"
    text = events_py.read_text(encoding="utf-8")
    assert "def make(" in text
    events_py.write_text(text.replace("def make(", "def make_event("), encoding="utf-8")
    result = build(project, tmp_path / "site")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    chapter = chapter1(project / "docs").relative_to(project).as_posix()
    assert re.search(re.escape(chapter) + r":\d+: quote agentloop\.events\.make: no object", out), (
        out
    )
    assert "Aborted" in out and "strict" in out


# (c) ---------------------------------------------------------------------------------------------------

FIXTURE = "docs/chapters/99-fixture.md"
# What every chapter must have besides its text (docs/hooks/conventions.py): a figure and 3 to 5 exercises.
CHAPTER_TAIL = (
    "\n![The loop](../assets/figures/loop.svg)\n\n## Exercises\n\n1. One.\n2. Two.\n3. Three.\n"
)


def test_a_line_past_the_end_fails_the_build(tmp_path):
    project = copy_project(tmp_path / "book")
    n = len((project / "agentloop/events.py").read_text(encoding="utf-8").splitlines())
    (project / FIXTURE).write_text(
        f"# Fixture\n\n::: quote agentloop/events.py:{n - 1}-{n + 1}\n", encoding="utf-8"
    )
    result = build(project, tmp_path / "site")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (
        f"{FIXTURE}:3: quote agentloop/events.py:{n - 1}-{n + 1}: line {n + 1} is past the end"
        in out
    ), out


def test_a_region_quotes_between_markers_and_a_missing_marker_fails(tmp_path):
    project = copy_project(tmp_path / "book")
    events_py = project / "agentloop/events.py"
    original = events_py.read_text(encoding="utf-8")
    marked = (
        original.rstrip("\n")
        + "\n\n\n# [quote:fixture]\ndef _fixture():\n    return 1\n# [/quote:fixture]\n"
    )
    events_py.write_text(marked, encoding="utf-8")
    lines = marked.splitlines()
    first, last = lines.index("# [quote:fixture]") + 2, lines.index("# [/quote:fixture]")
    (project / FIXTURE).write_text(
        f"# Fixture\n\n::: quote agentloop/events.py#fixture hl={first}\n" + CHAPTER_TAIL,
        encoding="utf-8",
    )
    ok = build(project, tmp_path / "site")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    html = (tmp_path / "site/chapters/99-fixture/index.html").read_text(encoding="utf-8")
    assert f"agentloop/events.py:{first}-{last}" in html
    assert "[quote:fixture]" not in html
    assert (
        'class="hll"' in html
    )  # hl= names a real line number: the block's first line is highlighted

    events_py.write_text(marked.replace("# [/quote:fixture]\n", ""), encoding="utf-8")
    result = build(project, tmp_path / "site2")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (
        f"{FIXTURE}:3: quote agentloop/events.py#fixture: marker [/quote:fixture] not found" in out
    ), out


# (d) ---------------------------------------------------------------------------------------------------


def test_prose_references_become_links_to_source_lines(tmp_path):
    project = copy_project(tmp_path / "book")
    make_first, _ = span_of(events.make)
    (project / FIXTURE).write_text(
        "# Fixture\n\nSee `events.py:3` and `agentloop/events.py:5`, and `agentloop.events.make`.\n\n"
        "```text\n`events.py:3` stays as it is inside a fence\n::: quote agentloop.events.nothing\n```\n"
        + CHAPTER_TAIL,
        encoding="utf-8",
    )
    result = build(project, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    html = (tmp_path / "site/chapters/99-fixture/index.html").read_text(encoding="utf-8")
    assert '<a href="../../source/agentloop/events.py/#L3"><code>events.py:3</code></a>' in html
    assert (
        '<a href="../../source/agentloop/events.py/#L5"><code>agentloop/events.py:5</code></a>'
        in html
    )
    assert (
        f'<a href="../../source/agentloop/events.py/#L{make_first}"><code>agentloop.events.make</code></a>'
        in html
    )
    # Code fences are left alone, directives in them included.
    assert "::: quote agentloop.events.nothing" in html
    source = (tmp_path / "site/source/agentloop/events.py/index.html").read_text(encoding="utf-8")
    assert 'id="L3"' in source and 'id="L5"' in source


# The plain functions, without a build ------------------------------------------------------------------


def test_hl_counts_file_lines_and_indented_directives_keep_their_indent():
    quoting = load_quoting()
    index = quoting.build_index(ROOT)
    first, last = span_of(events.check)
    page = quoting.PageContext(
        src_uri="chapters/x.md", url="chapters/x/", where="docs/chapters/x.md"
    )
    md = f'=== "Tab"\n\n    ::: quote agentloop.events.check hl={first + 1},{last}\n'
    out, errors, _ = quoting.expand_page(md, index, page)
    assert errors == []
    assert (
        f'    ```python linenums="{first}" title="agentloop/events.py:{first}-{last}" hl_lines="2 {last - first + 1}"'
        in out
    )
    assert (
        f'    [source](../source/agentloop/events.py.md#L{first} "agentloop/events.py:{first}"){{ .agentloop-quote-src }}'
        in out
    )

    _, errors, _ = quoting.expand_page(
        f"::: quote agentloop.events.check hl={last + 1}\n", index, page
    )
    assert errors and "outside the quoted lines" in errors[0]


def test_errors_name_page_line_and_reference():
    quoting = load_quoting()
    index = quoting.build_index(ROOT)
    page = quoting.PageContext(
        src_uri="chapters/x.md", url="chapters/x/", where="docs/chapters/x.md"
    )
    md = "text\n\n::: quote agentloop.events.gone\n\nSee `agentloop.events.also_gone`.\n"
    _, errors, _ = quoting.expand_page(md, index, page)
    assert errors[0].startswith("docs/chapters/x.md:3: quote agentloop.events.gone: no object")
    assert errors[1].startswith("docs/chapters/x.md:5: reference `agentloop.events.also_gone`")


# The teaching conventions (docs/hooks/conventions.py) ---------------------------------------------------------


def load_conventions():
    return load_hook_module("conventions.py")


GOOD_CHAPTER = (
    "# 3. A chapter\n\nSee [chapter 2](02-model-families.md), chapters [4](04-tokens.md) and [5](05-tools.md).\n"
    "The [KV cache](../glossary.md#kv-cache) is kept; the KV cache grows.\n\n"
    "```text\nchapter 9 inside a fence is not a reference, nor is the KV cache\n```\n"
    + CHAPTER_TAIL
)


def glossary_terms():
    conventions = load_conventions()
    terms, errors = conventions.parse_glossary((ROOT / "docs/glossary.md").read_text("utf-8"))
    assert errors == [] and terms
    return conventions, terms


def test_a_good_chapter_passes_every_convention():
    conventions, terms = glossary_terms()
    where = "docs/chapters/03-x.md"
    assert conventions.check_page("chapters/03-x.md", GOOD_CHAPTER, where, terms) == []


@pytest.mark.parametrize(
    "bad,expected",
    [
        (
            GOOD_CHAPTER.replace("[chapter 2](02-model-families.md)", "chapter 2"),
            "'chapter 2' is plain",
        ),
        (GOOD_CHAPTER.replace("[5](05-tools.md)", "5"), "is plain text"),
        (
            GOOD_CHAPTER.replace("[KV cache](../glossary.md#kv-cache)", "KV cache"),
            "'KV cache' is explained in chapter 8",
        ),
        (GOOD_CHAPTER.replace("![The loop](../assets/figures/loop.svg)", ""), "no figure"),
        (GOOD_CHAPTER.replace("## Exercises", "## Questions"), "must end with a '## Exercises'"),
        (GOOD_CHAPTER.replace("3. Three.\n", ""), "holds 2 numbered items, not 3 to 5"),
        (GOOD_CHAPTER + "\n## Later\n\nText.\n", "must end with a '## Exercises'"),
        (
            GOOD_CHAPTER.replace("1. One.\n", '1. One?\n    ??? note "Answer"\n\n        Yes.\n'),
            "put a blank line before '??? note \"Answer\"'",
        ),
    ],
)
def test_each_convention_fails_on_a_bad_chapter(bad, expected):
    conventions, terms = glossary_terms()
    errors = conventions.check_page("chapters/03-x.md", bad, "docs/chapters/03-x.md", terms)
    assert any(expected in e for e in errors), errors
    assert all(e.startswith("docs/chapters/03-x.md") for e in errors)


def test_a_term_explained_later_needs_no_link_from_its_own_chapter_on():
    conventions, terms = glossary_terms()
    plain = GOOD_CHAPTER.replace("[KV cache](../glossary.md#kv-cache)", "KV cache")
    assert conventions.check_page("chapters/08-x.md", plain, "docs/chapters/08-x.md", terms) == []


def test_the_glossary_feeds_the_hover_text():
    conventions, terms = glossary_terms()
    hover = conventions.glossary_terms(terms)
    kv = next(t for t in terms if t.id == "kv-cache")
    assert kv.chapter == 8 and hover["KV cache"] == kv.definition and "`" not in kv.definition
    # Every entry names a chapter that exists.
    numbers = {int(p.name[:2]) for p in (ROOT / "docs/chapters").glob("[0-9][0-9]-*.md")}
    assert {t.chapter for t in terms} <= numbers


def test_a_chapter_without_figure_or_exercises_fails_the_build(tmp_path):
    project = copy_project(tmp_path / "book")
    (project / FIXTURE).write_text(
        "# Fixture\n\nAs chapter 3 says, the KV cache grows.\n", encoding="utf-8"
    )
    result = build(project, tmp_path / "site")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"{FIXTURE}:3: 'chapter 3' is plain text" in out, out
    assert f"{FIXTURE}: no figure" in out and f"{FIXTURE}: the chapter must end with" in out, out


def test_figures_are_inlined_and_every_module_is_in_the_reference(site):
    html = page(site, chapter1(ROOT / "docs"))
    assert '<figure class="agentloop-figure" id="figure-loop"><svg' in html
    assert 'src="../../assets/figures/loop.svg"' not in html
    assert "<abbr" in html  # the glossary's hover text
    # The exercises' answers are folded away, one per answer.
    exercises = html.split('id="exercises"', 1)[1]
    assert exercises.count('<details class="note"') == exercises.count("<li>") >= 3
    reference = (site / "reference/index.html").read_text(encoding="utf-8")
    for file in ROOT.joinpath("agentloop").rglob("*.py"):
        module = ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if "__pycache__" in file.parts or module.endswith("__main__"):
            continue
        assert f'id="{module}"' in reference, module
    # A listing links to its module's entry.
    assert 'href="../../reference/#agentloop.events"' in html


def test_a_term_hovers_at_its_first_appearance_only_and_never_in_a_heading():
    conventions = load_conventions()
    kv = '<abbr title="The cache.">KV cache</abbr>'
    html = f"<h2>The {kv}</h2><p>A {kv} grows; the {kv} is kept.</p>"
    assert (
        conventions.first_abbr_only(html)
        == f"<h2>The KV cache</h2><p>A {kv} grows; the KV cache is kept.</p>"
    )


def _text(fragment: str) -> str:
    """An HTML fragment's text as a reader sees it."""
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]*>", "", fragment)).strip()


def test_every_terms_hover_text_is_its_first_sentence_as_the_glossary_shows_it(site):
    """Issue 47: the hover text dropped every `_` and `*` (`<|imend|>`, `runpython`, `maxsteps`). Each entry's
    hover text is the first sentence of its definition exactly as the built glossary page shows it, and every
    hover in the book is one of them."""
    conventions, terms = glossary_terms()
    hovers = conventions.glossary_terms(terms)
    assert hovers["special token"].count("<|im_end|>") == 1 and "run_python" in hovers["sandbox"]
    # Each edition's pages hover with its own glossary (the zh-Hant one once glossary.zh-Hant.md exists).
    # The zh-Hans glossary is the zh-Hant one through the conversion (docs/hooks/editions.py's read).
    chinese = ("zh-Hant", "zh-Hans")
    editions = [("", terms, lambda f: not set(chinese) & set(f.relative_to(site).parts))]
    for lang in chinese:
        zh_glossary = ROOT / f"docs/glossary.{lang}.md"
        if not (ROOT / "docs/glossary.zh-Hant.md").exists() or not (site / lang).is_dir():
            break  # not translated yet, or not built (a build with AGENTLOOP_ZH_HANS=false)
        text = load_hook_module("editions.py").read(zh_glossary)
        zh_terms, errors = conventions.parse_glossary(text)
        assert errors == [] and {t.id for t in zh_terms} == {t.id for t in terms}
        editions.append(
            (f"{lang}/", zh_terms, lambda f, lang=lang: lang in f.relative_to(site).parts)
        )
    for prefix, edition_terms, mine in editions:
        glossary = (site / prefix / "glossary/index.html").read_text(encoding="utf-8")
        shown = {}
        for term in edition_terms:
            section = glossary.split(f'id="{term.id}"', 1)[1].split("<h2", 1)[0]
            definition = _text(re.findall(r"<p>(.*?)</p>", section, re.S)[1]).replace("\n", " ")
            shown[term.id] = re.split(r"(?<=[.!?])\s|(?<=[。！？])", definition, maxsplit=1)[0]
        assert {t.id: t.definition for t in edition_terms} == shown
        titles = set()
        for file in filter(mine, site.rglob("*.html")):
            html = file.read_text("utf-8")
            titles |= {_text(t) for t in re.findall(r'<abbr title="([^"]*)"', html)}
        assert titles and titles <= set(shown.values()), (prefix, titles - set(shown.values()))


PACKAGES = sorted(
    p.parent
    for package in ("agentloop", "demo_server")
    for p in (ROOT / package).rglob("__init__.py")
    if "__pycache__" not in p.parts
)


@pytest.mark.parametrize("folder", PACKAGES, ids=lambda p: p.name)
def test_a_packages_overview_lists_its_files_as_a_list(site, folder):
    """Issue 47: a package docstring's aligned file list rendered as one run-on paragraph, `__main__.py` as a
    bold "main". Where a package's docstring lists its files, the API reference shows each as an item of a
    list, its name in code. Every package's overview lists every file and folder of the package."""
    module = ".".join(folder.relative_to(ROOT).parts)
    doc = importlib.import_module(module).__doc__ or ""
    listed = re.findall(r"^- `([^`]+)`: ", doc, re.M)
    assert listed, f"{module}'s docstring lists no files as '- `name`: what it holds'"
    reference = (site / "reference/index.html").read_text(encoding="utf-8")
    section = reference.split(f'id="{module}"', 1)[1].split('class="doc doc-children"', 1)[0]
    assert "<strong>" not in section
    items = re.findall(r"<li>\s*(?:<p>)?<code>([^<]+)</code>:", section)
    assert items == listed
    present = {
        p.name + ("/" if p.is_dir() else "")
        for p in folder.iterdir()
        if p.name not in ("__init__.py", "__pycache__")
        and (p.is_dir() or p.suffix in (".py", ".ts"))
    }
    assert present <= set(listed), present - set(listed)


def test_chapter_11s_shared_text_side_is_what_the_backends_inherit():
    """Chapter 11 says render, piece, token_event and done_event are one function each, inherited from TextSide,
    and encode is each backend's own: issue 47 found it still calling them SimpleBackend's."""
    from agentloop.model_backends.simple_backend import SimpleBackend
    from agentloop.model_backends.text_side import TextSide
    from agentloop.model_backends.vllm.backend import VLLMBackend

    for name in ("render", "piece", "token_event", "done_event"):
        assert getattr(SimpleBackend, name) is getattr(VLLMBackend, name) is getattr(TextSide, name)
    assert "encode" in vars(SimpleBackend) and "encode" in vars(VLLMBackend)
    chapter = (ROOT / "docs/chapters/11-backends.md").read_text(encoding="utf-8")
    assert "Both backends inherit these methods from `TextSide`" in chapter
    assert "`encode` is each backend's own" in chapter and "for the model panel" not in chapter


def test_agentloop_edition_builds_one_edition_for_an_authors_preview(tmp_path):
    """AGENTLOOP_EDITION=en: the English edition alone, as `mkdocs serve` rebuilds it for an author (bench/build.py
    times it); a name the book has no edition of is refused."""
    from tests.conftest import build_book

    site = build_book(tmp_path / "site", AGENTLOOP_EDITION="en")
    assert (site / "chapters" / "01-one-question" / "index.html").is_file()
    assert not (site / "zh-Hant").exists() and not (site / "zh-Hans").exists()
    with pytest.raises(AssertionError, match="Locale fr is not present"):
        build_book(tmp_path / "other", AGENTLOOP_EDITION="fr")
