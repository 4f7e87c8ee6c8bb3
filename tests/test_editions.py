"""The two editions (issue 44): the zh-Hant edition is built beside the English one at /zh-Hant/, held in step by
the strict build (docs/hooks/editions_in_step.py over docs/hooks/editions.py), found by a Chinese search, and one
switch in the header away, to the same section; the panels start in the page's language and their own select
never leaves the page.

The builds run on a copy of the book (tests/test_book.py's copy_project) with translated pages of its own where the
test needs them: a "translation" here is the English page under its zh-Hant name with a Chinese paragraph added,
which keeps every part the check compares and gives search a Chinese sentence to find."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.conftest import demo_server, live_panel, static_site
from tests.test_book import build, copy_project, load_hook_module

ROOT = Path(__file__).resolve().parent.parent
editions = load_hook_module("editions.py")
in_step = load_hook_module("editions_in_step.py")

# The Chinese paragraph a test translation carries, and the query that must find it.
ZH_SENTENCE = "本章說明模型看見的工具結構描述，以及函式如何被呼叫。"
ZH_QUERY = "結構描述"


def blob(path: Path) -> str:
    return subprocess.run(
        ["git", "hash-object", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()


def translate(docs: Path, name: str, source_blob: str | None = None) -> Path:
    """A stand-in translation of docs/`name`: its front matter, the English text, a Chinese paragraph under the
    title. Its kept parts are the English page's."""
    english = docs / name
    text = english.read_text(encoding="utf-8")
    title, rest = text.split("\n", 1)
    page = editions.translation_of(english)
    page.write_text(
        f"---\nsource_blob: {source_blob or editions.git_blob(english.read_bytes())}\n---\n"
        f"{title}\n\n{ZH_SENTENCE}\n{rest}",
        encoding="utf-8",
    )
    return page


def nav(project: Path) -> list[str]:
    """The docs/ paths of the navigation's pages, from mkdocs.yml."""
    config = (project / "mkdocs.yml").read_text(encoding="utf-8")
    return re.findall(r"^  - (?:.*: )?([\w/.-]+\.md)$", config.split("\nnav:\n")[1], re.M)


def list_untranslated(project: Path, skip: tuple[str, ...] = ()) -> None:
    """mkdocs.yml's extra.untranslated made the pages of the navigation without a translation in the copy, but
    `skip` (left neither translated nor listed)."""
    docs = project / "docs"
    names = [
        n for n in nav(project) if not editions.translation_of(docs / n).exists() and n not in skip
    ]
    listing = (
        "    zh-Hant:\n" + "".join(f"      - {n}\n" for n in names)
        if names
        else "    zh-Hant: []\n"
    )
    config = project / "mkdocs.yml"
    text = re.sub(
        r"^    zh-Hant:(?: \[\])?\n(?:      - .*\n)*",
        listing,
        config.read_text(encoding="utf-8"),
        count=1,
        flags=re.M,
    )
    config.write_text(text, encoding="utf-8")


# --- the check, on its own (no build) -------------------------------------------------------------------


def test_every_page_of_the_navigation_is_translated_or_listed_as_untranslated():
    docs = ROOT / "docs"
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = re.findall(r"^      - ([\w/.-]+\.md)$", config.split("untranslated:")[1], re.M)
    nav = re.findall(r"^  - (?:.*: )?([\w/.-]+\.md)$", config.split("\nnav:\n")[1], re.M)
    errors, _ = in_step.check(docs, nav, listed)
    assert errors == []
    for name in nav:
        assert (name in listed) != editions.translation_of(docs / name).exists(), name


def english_docs(folder: Path, *names: str) -> Path:
    """A docs/ folder holding only these English pages of the book (no translation of them yet)."""
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes((ROOT / "docs" / name).read_bytes())
    return folder


def test_the_check_names_a_missing_a_drifted_and_a_needlessly_listed_page(tmp_path):
    docs = english_docs(tmp_path, "chapters/05-tools.md", "chapters/09-sampling.md", "glossary.md")
    pages = ["chapters/05-tools.md", "chapters/09-sampling.md", "glossary.md"]
    translate(docs, "chapters/05-tools.md")
    drifted = translate(docs, "chapters/09-sampling.md")
    text = drifted.read_text(encoding="utf-8")
    quote = next(line for line in text.splitlines() if line.startswith("::: quote"))
    drifted.write_text(text.replace(quote + "\n", "", 1), encoding="utf-8")
    errors, stale = in_step.check(docs, pages, ["chapters/05-tools.md"])
    assert any(
        e.startswith("docs/chapters/09-sampling.zh-Hant.md is not in step") and "quotes differ" in e
        for e in errors
    ), errors
    assert any("docs/glossary.md has no zh-Hant page" in e for e in errors), errors
    assert any("remove chapters/05-tools.md from extra.untranslated" in e for e in errors), errors
    assert stale == []


def test_a_translation_of_an_older_english_page_is_stale_not_wrong(tmp_path):
    docs = english_docs(tmp_path, "chapters/05-tools.md")
    translate(docs, "chapters/05-tools.md", source_blob="0" * 40)
    errors, stale = in_step.check(docs, ["chapters/05-tools.md"], [])
    assert errors == [] and stale == ["chapters/05-tools.md"]


# --- the strict build ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_editions(tmp_path_factory) -> tuple[Path, str]:
    """A copy of the book with chapter 5 translated and chapter 9 translated from an older English page (stale),
    built strictly; (site, the build's log)."""
    project = copy_project(tmp_path_factory.mktemp("editions") / "book")
    docs = project / "docs"
    # A real translation where one has landed (the search test then queries its Chinese), else a stand-in.
    for name in ("chapters/05-tools.md", "chapters/09-sampling.md"):
        if not editions.translation_of(docs / name).exists():
            translate(docs, name)
    # Chapter 13 not translated yet, whether or not it is.
    editions.translation_of(docs / "chapters/13-sandbox.md").unlink(missing_ok=True)
    list_untranslated(project)
    # Chapter 9's translation made stale: as if written from an older English page.
    page = editions.translation_of(docs / "chapters/09-sampling.md")
    text = page.read_text(encoding="utf-8")
    recorded = editions.front_matter(text)["source_blob"]
    page.write_text(text.replace(recorded, "0" * 40, 1), encoding="utf-8")
    site = project / "site"
    result = build(project, site)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return site, result.stdout + result.stderr


def test_the_zh_edition_has_every_page_at_the_same_path(two_editions):
    site, _ = two_editions
    for english in [site / "index.html", *site.glob("chapters/*/index.html")]:
        relative = english.relative_to(site)
        zh = site / "zh-Hant" / relative
        assert zh.is_file(), relative
        assert '<html lang="zh-Hant"' in zh.read_text(encoding="utf-8"), relative
    # The code is one: no second copy of the source pages, and zh-Hant quotes link to the English ones.
    assert not (site / "zh-Hant" / "source").exists()
    page = (site / "zh-Hant/chapters/05-tools/index.html").read_text(encoding="utf-8")
    assert re.search(r'href="\.\./\.\./\.\./source/agentloop/[\w/]+\.py/#L\d+"', page)
    assert ZH_QUERY in page
    # The same heading ids as the English page: the switch lands on the same section.
    english = (site / "chapters/05-tools/index.html").read_text(encoding="utf-8")
    heading_ids = re.compile(r'<h[1-3] id="([^"]+)"')
    assert heading_ids.findall(page) == heading_ids.findall(english)
    # The navigation is translated: a translated page by its own title, one not yet translated by mkdocs.yml's.
    translated = site.parent / "docs/chapters/05-tools.zh-Hant.md"
    title = in_step.nav_title(translated.read_text(encoding="utf-8"))
    assert re.search(
        rf'class="md-nav__link[^"]*"[^>]*>\s*<span class="md-ellipsis">\s*{re.escape(title)}', page
    )
    assert "13. 執行工具：run_python 的沙盒" in page
    # The edition's own sitemap, which Material's instant navigation fetches under /zh-Hant/ (a 404 before).
    sitemap = (site / "zh-Hant" / "sitemap.xml").read_text(encoding="utf-8")
    locs = re.findall(r"<loc>([^<]*)</loc>", sitemap)
    assert any(loc.endswith("/zh-Hant/chapters/05-tools/") for loc in locs), locs
    # The API reference is rendered once, in English.
    reference = (site / "zh-Hant/reference/index.html").read_text(encoding="utf-8")
    assert 'href="../../reference/"' in reference and "doc-module" not in reference


def test_the_zh_hans_edition_is_zh_hant_converted_at_the_same_paths(two_editions):
    """The third edition is made at build time from the zh-Hant pages (docs/hooks/zh_hans_pages.py): every page at
    the same path under /zh-Hans/, Simplified, the same ids and listings; no file of it in docs/."""
    site, log = two_editions
    assert not list((site.parent / "docs").rglob("*.zh-Hans.md"))
    for english in [site / "index.html", *site.glob("chapters/*/index.html")]:
        relative = english.relative_to(site)
        assert '<html lang="zh"' in (site / "zh-Hans" / relative).read_text(encoding="utf-8"), (
            relative
        )
    page = (site / "zh-Hans/chapters/05-tools/index.html").read_text(encoding="utf-8")
    assert "结构描述" in page and ZH_QUERY not in page
    english = (site / "chapters/05-tools/index.html").read_text(encoding="utf-8")
    heading_ids = re.compile(r'<h[1-3] id="([^"]+)"')
    assert heading_ids.findall(page) == heading_ids.findall(english)
    listing = re.compile(r'<span class="filename">.*?</span>|<pre\b.*?</pre>', re.S)
    assert listing.findall(page) == listing.findall(english)
    # Not translated yet (chapter 13): mkdocs.yml's zh-Hans title; stale (chapter 9): the note, converted.
    assert "13. 运行工具：run_python 的沙箱" in page
    assert "英文原文已更新" in (site / "zh-Hans/chapters/09-sampling/index.html").read_text(
        encoding="utf-8"
    )
    assert "这一页还没有中文版" in (site / "zh-Hans/chapters/13-sandbox/index.html").read_text(
        encoding="utf-8"
    )
    sitemap = (site / "zh-Hans" / "sitemap.xml").read_text(encoding="utf-8")
    assert any(
        loc.endswith("/zh-Hans/chapters/05-tools/")
        for loc in re.findall(r"<loc>([^<]*)</loc>", sitemap)
    )


def test_the_listings_render_identically_in_both_editions(two_editions):
    site, _ = two_editions
    listing = re.compile(r'<span class="filename">.*?</span>|<pre\b.*?</pre>', re.S)
    english = listing.findall((site / "chapters/05-tools/index.html").read_text(encoding="utf-8"))
    zh = listing.findall(
        (site / "zh-Hant/chapters/05-tools/index.html").read_text(encoding="utf-8")
    )
    assert english and zh == english


def test_a_code_block_is_highlighted_once_and_keeps_its_own_title():
    """docs/hooks/highlight_once.py: the second page's block comes from the cache, its title stored again in that
    page's stash (whose numbering differs: the page has raw HTML before the block)."""
    import markdown

    hook = load_hook_module("highlight_once.py")
    hook.on_startup("build", False)
    extensions = ["pymdownx.highlight", "pymdownx.superfences", "md_in_html"]
    block = '```python linenums="3" title="agentloop/x.py:3-4"\ndef f():\n    return 1\n```\n'
    first = markdown.markdown(block, extensions=extensions)
    cached = len(hook._blocks.values)
    second = markdown.markdown('<div markdown="1">*x*</div>\n\n' + block, extensions=extensions)
    assert cached >= 1 and len(hook._blocks.values) == cached  # the second page's block was a hit
    assert first in second and "agentloop/x.py:3-4" in second and hook.MARK not in second


def test_the_next_build_takes_a_code_block_from_the_disk_and_an_unreadable_store_is_a_cold_start(
    tmp_path, monkeypatch
):
    """docs/hooks/highlight_once.py keeps the blocks a run used in .cache/highlight.json (build_cache.py): the next
    process colours none of them again and gives the same HTML; a store it cannot read, or one written by another
    Pygments, starts cold without an error."""
    import markdown
    from pymdownx import highlight as pymdownx_highlight

    config = SimpleNamespace(config_file_path=str(tmp_path / "mkdocs.yml"), plugins={})
    extensions = ["pymdownx.highlight", "pymdownx.superfences"]
    block = '```python linenums="3" title="agentloop/x.py:3-4"\ndef f():\n    return 1\n```\n'

    def a_process():
        """The hook as a new `mkdocs build` loads it, and how many blocks Pygments coloured for one page."""
        hook = load_hook_module("highlight_once.py")
        hook.on_startup("build", False)
        hook.on_config(config)
        hook.on_pre_build(config)
        coloured = []
        pygments_highlight = pymdownx_highlight.highlight
        with monkeypatch.context() as m:  # Pygments, counted
            m.setattr(
                pymdownx_highlight,
                "highlight",
                lambda *a: coloured.append(1) or pygments_highlight(*a),
            )
            html = markdown.markdown(block, extensions=extensions)
        hook.on_shutdown()
        return html, len(coloured)

    cold, coloured_cold = a_process()
    warm, coloured_warm = a_process()
    assert (coloured_cold, coloured_warm) == (1, 0) and warm == cold
    store = tmp_path / ".cache" / "highlight.json"
    assert "pygments" in json.loads(store.read_text())["versions"]
    for unreadable in ("{not json", json.dumps({"versions": "pygments 0.1", "values": {}})):
        store.write_text(unreadable)
        assert a_process() == (cold, 1)


def test_a_stale_translation_is_listed_by_the_build_and_says_so_on_its_page(two_editions):
    site, log = two_editions
    assert re.search(
        r"\d+ zh-Hant page\(s\) follow an older English page.*chapters/09-sampling\.md", log
    )
    stale = (site / "zh-Hant/chapters/09-sampling/index.html").read_text(encoding="utf-8")
    fresh = (site / "zh-Hant/chapters/05-tools/index.html").read_text(encoding="utf-8")
    assert "英文原文已更新" in stale and 'href="../../../chapters/09-sampling/"' in stale
    assert "英文原文已更新" not in fresh
    untranslated = (site / "zh-Hant/chapters/13-sandbox/index.html").read_text(encoding="utf-8")
    assert "尚未翻譯" in untranslated


def test_a_drifted_or_missing_translation_fails_the_strict_build_naming_it(tmp_path):
    project = copy_project(tmp_path / "book")
    docs = project / "docs"
    page = translate(docs, "chapters/05-tools.md")
    editions.translation_of(docs / "chapters/13-sandbox.md").unlink(missing_ok=True)
    list_untranslated(project, skip=("chapters/13-sandbox.md",))
    text = page.read_text(encoding="utf-8")
    panel = next(line for line in text.splitlines() if 'class="agentloop-panel"' in line)
    page.write_text(text.replace(panel, panel.replace("data-", "data-x-", 1), 1), encoding="utf-8")
    result = build(project, tmp_path / "site")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (
        "docs/chapters/05-tools.zh-Hant.md is not in step with docs/chapters/05-tools.md: html"
        in out
    )
    assert "docs/chapters/13-sandbox.md has no zh-Hant page" in out


# --- in a browser ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(two_editions):
    with static_site(two_editions[0]) as url:
        yield url


def found_by_search(base: str, browser, edition: str, query: str) -> list[str]:
    """The addresses Material's search lists for `query` typed on `edition`'s front page."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/{edition}/")
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box, first = (
        page.locator("input.md-search__input"),
        page.locator(".md-search-result__item a").first,
    )
    # Material's search worker drops a query typed before its index is built (seconds on a busy machine): type
    # it again until the index answers.
    for _ in range(30):
        box.fill(query)
        try:
            first.wait_for(timeout=2000)
            break
        except PlaywrightTimeout:
            box.fill("")
    first.wait_for(timeout=1000)
    hrefs = page.locator(".md-search-result__item a").evaluate_all("(a) => a.map((x) => x.href)")
    page.close()
    return hrefs


def test_a_chinese_query_finds_its_chapter_in_the_zh_edition(base, browser):
    hrefs = found_by_search(base, browser, "zh-Hant", ZH_QUERY)
    assert any("/zh-Hant/chapters/05-tools/" in h for h in hrefs), hrefs


def test_a_simplified_query_finds_its_chapter_in_the_zh_hans_edition(base, browser):
    hrefs = found_by_search(base, browser, "zh-Hans", "结构描述")
    assert any("/zh-Hans/chapters/05-tools/" in h for h in hrefs), hrefs


def test_the_header_switch_keeps_page_and_section_and_is_remembered(base, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    english = (ROOT / "docs/chapters/05-tools.md").read_text(encoding="utf-8")
    section = editions.parts(english).headings[2][1]
    page.goto(f"{base}/chapters/05-tools/#{section}")
    page.locator(".md-header .md-select").first.hover()
    page.locator('.md-select a[hreflang="zh-Hant"]').click()
    page.wait_for_url(f"{base}/zh-Hant/chapters/05-tools/#{section}")
    assert page.evaluate("document.documentElement.lang") == "zh-Hant"
    assert page.evaluate("localStorage.getItem('agentloop.lang')") == "zh-Hant"
    select = page.locator("select.al-lang").first
    select.wait_for()
    assert select.input_value() == "zh-Hant"  # the panels start in the page's language
    page.locator(".md-header .md-select").first.hover()
    page.locator('.md-select a[hreflang="en"]').click()
    page.wait_for_url(f"{base}/chapters/05-tools/#{section}")
    assert page.evaluate("localStorage.getItem('agentloop.lang')") == "en"
    assert page.locator("select.al-lang").first.input_value() == "en"
    page.close()


def test_the_switch_reaches_the_same_section_in_zh_hans_whose_panels_speak_simplified(
    base, browser
):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    english = (ROOT / "docs/chapters/05-tools.md").read_text(encoding="utf-8")
    section = editions.parts(english).headings[2][1]
    page.goto(f"{base}/zh-Hant/chapters/05-tools/#{section}")
    page.locator(".md-header .md-select").first.hover()
    page.locator('.md-select a[hreflang="zh-Hans"]').click()
    page.wait_for_url(f"{base}/zh-Hans/chapters/05-tools/#{section}")
    assert page.evaluate("localStorage.getItem('agentloop.lang')") == "zh-Hans"
    select = page.locator("select.al-lang").first
    select.wait_for()
    assert select.input_value() == "zh-Hans"  # the panels start in the page's language
    assert select.get_attribute("aria-label") == "语言"  # zh-Hant: 語言
    assert [o.strip() for o in select.locator("option").all_inner_texts()] == [
        "English",
        "中文（繁體）",
        "中文（简体）",
    ]
    # A server's text: its zh-Hans where sent; an older recording's zh (no zh-Hans) rather than nothing.
    picked = page.evaluate(
        """async () => {
            const loaded = document.querySelector('script[src*="assets/edition.js"]').src;
            const { pick } = await import(loaded.replace('edition.js', 'i18n.js'));
            return [pick({en: 'a', zh: '沙盒', 'zh-Hans': '沙箱'}), pick({en: 'a', zh: '沙盒'})];
        }"""
    )
    assert picked == ["沙箱", "沙盒"]
    # The root, opened from outside, goes to the edition chosen.
    page.goto("about:blank")
    page.goto(f"{base}/")
    page.wait_for_url(f"{base}/zh-Hans/")
    page.close()


def test_a_panels_select_switches_the_panels_in_place_never_the_page(base, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{base}/chapters/05-tools/")
    panel = page.locator(".agentloop-panel").first
    panel.locator("select.al-lang").wait_for()
    marker = page.evaluate("() => (window.__kept = Math.random())")
    panel.locator("select.al-lang").select_option("zh-Hant")
    page.wait_for_timeout(300)
    # Not a new page: nothing a panel holds (a live run, its conversation) is lost.
    assert page.evaluate("() => window.__kept") == marker
    assert page.url == f"{base}/chapters/05-tools/"
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.evaluate("localStorage.getItem('agentloop.lang')") == "zh-Hant"
    assert all(
        s == "zh-Hant"
        for s in page.locator("select.al-lang").evaluate_all("(s) => s.map((x) => x.value)")
    )
    # The next English page's panels start in English, the page's language.
    page.goto(f"{base}/chapters/09-sampling/")
    assert page.locator("select.al-lang").first.input_value() == "en"
    page.close()


def test_a_zh_page_replays_the_one_set_of_recordings(base, browser):
    """The recordings are at the root, beside the English pages; a zh-Hant page's panels (the loop's, the stages',
    chapter 7's media panel) read them there."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    page.goto(f"{base}/zh-Hant/chapters/04-tokens/")
    page.wait_for_function(
        "() => document.querySelector('.als-status').textContent.includes('已載入')", timeout=20000
    )
    page.goto(f"{base}/zh-Hant/chapters/05-tools/")
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-all").click()
    panel.locator(".al-run-end").wait_for(timeout=20000)
    page.goto(f"{base}/zh-Hant/chapters/07-media/")
    page.locator('.agentloop-media .al-att-family[data-family="qwen3_5"] .al-att-run').wait_for(
        timeout=20000
    )
    assert [url for url in missing if "sitemap.xml" not in url] == []
    page.close()


def test_the_root_opens_the_chosen_edition_and_a_chapter_link_opens_its_own(base, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("localStorage.setItem('agentloop.lang', 'zh-Hant')")
    page = context.new_page()
    page.goto(f"{base}/")
    page.wait_for_url(f"{base}/zh-Hant/")
    page.goto(f"{base}/chapters/05-tools/")
    page.wait_for_timeout(500)
    assert page.url == f"{base}/chapters/05-tools/"
    context.close()


@pytest.fixture(scope="module")
def server(two_editions):
    with demo_server(two_editions[0], wait_s=300, model=None, device="cpu") as srv:
        yield srv


def test_the_header_switch_asks_before_a_live_conversation_would_end(server, browser):
    """The header's switch loads the other edition's page, which ends this page's live runs: with a conversation on
    the page the reader is asked first, and cancelling keeps the page, the conversation and all."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    panel = live_panel(page, f"{server.url}/chapters/05-tools/")
    panel.locator("textarea").fill("Say hello.")
    panel.locator("button.al-run").click()
    panel.locator(".al-run-end").wait_for(timeout=120000)
    asked: list[str] = []

    def switch(answer: str) -> None:
        page.once("dialog", lambda d: (asked.append(d.message), getattr(d, answer)()))
        page.locator(".md-header .md-select").first.hover()
        page.locator('.md-select a[hreflang="zh-Hant"]').click()

    switch("dismiss")
    page.wait_for_timeout(500)
    assert asked and "live conversation on this page would end" in asked[0], asked
    assert page.url == f"{server.url}/chapters/05-tools/"
    assert panel.locator(".al-turn").count() == 1 and panel.locator(".al-run-end").is_visible()
    assert page.evaluate("localStorage.getItem('agentloop.lang')") != "zh-Hant"
    section = panel.evaluate(
        "(p) => [...document.querySelectorAll('.md-content h2[id]')]"
        ".filter((h) => h.compareDocumentPosition(p) & Node.DOCUMENT_POSITION_FOLLOWING).pop().id"
    )
    switch("accept")
    # Scrolled to the panel, with no #section in the address: the section it is in, by the headings' shared ids.
    page.wait_for_url(f"{server.url}/zh-Hant/chapters/05-tools/#{section}")
    assert len(asked) == 2
    page.close()
