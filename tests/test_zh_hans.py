"""The zh-Hans edition, generated from zh-Hant (issue 44): agentloop/zh_hans.py (OpenCC's tw2sp with the project's
table) makes every page at build time (docs/hooks/zh_hans_pages.py), the panels' strings
(scripts/zh_hans_assets.py), the figures' labels (scripts/figures.py) and the server's messages
(demo_server/zh_hans.py). These check the conversion itself, cheaply: what a page keeps, what the table changes,
the navigation, the panels' table, the server's answers. The browser half (the switch, a zh-Hans panel, search, the
layout and font) is in tests/test_editions.py and tests/test_layout.py."""

from __future__ import annotations

import re
from pathlib import Path

import opencc
import pytest
import yaml

from agentloop import zh_hans
from demo_server.client import Client, ServerThread, free_port
from demo_server.stream import sse
from scripts import zh_hans_assets
from tests.test_book import load_hook_module

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
editions = load_hook_module("editions.py")
terms_hook = load_hook_module("terms.py")
PAGES = sorted(DOCS.rglob("*.zh-Hant.md"))
# A character that Traditional writes and Simplified does not (OpenCC's t2s changes it): what must not be left
# in a zh-Hans text outside its kept parts.
T2S = opencc.OpenCC("t2s")


def hans(path: Path) -> str:
    return editions.read(path.with_name(path.name.replace(".zh-Hant.md", ".zh-Hans.md")))


def traditional_left(text: str) -> set[str]:
    return {c for c in text if "\u3400" <= c <= "\u9fff" and T2S.convert(c) != c}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_a_generated_page_keeps_every_kept_part_and_is_simplified(page):
    """Byte for byte: the front matter, `::: quote` lines, code blocks, HTML lines, link targets, heading ids, tabs,
    exercises (what the build checks), and every code span and attribute list; the prose has no Traditional
    character left."""
    hant, simplified = page.read_text(encoding="utf-8"), hans(page)
    assert editions.parts(simplified) == editions.parts(hant)
    assert editions.FRONT_MATTER.match(simplified).group(0) == editions.FRONT_MATTER.match(
        hant
    ).group(0)
    for kept in (r"`[^`\n]+`", r"\{[#:.][^}\n]*\}", r"\]\([^)]*\)"):
        assert re.findall(kept, simplified) == re.findall(kept, hant), kept
    english = page.with_name(page.name.replace(".zh-Hant.md", ".md")).read_text(encoding="utf-8")
    assert editions.differences(english, simplified) == []
    prose = []
    fence = None
    for line in editions.FRONT_MATTER.sub("", simplified).splitlines():
        if re.match(r"^\s*(```|~~~)", line):
            fence = None if fence else line.strip()[:3]
        elif not fence and not line.lstrip().startswith(("::: ", "<")):
            prose.append(re.sub(r"`[^`\n]+`", "", line))
    left = traditional_left("\n".join(prose))
    assert not left, f"Traditional left in the zh-Hans page: {''.join(sorted(left))}"


def test_the_project_table_applies_where_tw2sp_alone_is_wrong():
    sandbox, prefill = (
        hans(DOCS / "chapters/13-sandbox.zh-Hant.md"),
        hans(DOCS / "chapters/08-prefill-decode.zh-Hant.md"),
    )
    assert "沙箱" in sandbox and "沙盒" not in sandbox  # the term, not tw2sp's
    assert "预填充" in prefill and "预填（" not in prefill
    assert "内核接口" in sandbox and "核心接口" not in sandbox  # kernel interfaces (13)
    assert "2 个核心" in prefill  # CPU cores (08) stay 核心
    # 序列 is a sequence: tw2sp alone makes it 串行 (serial), which the table prevents.
    assert "串行" in zh_hans.opencc_only("整個序列")
    assert zh_hans.convert("整個序列") == "整个序列"
    for page in PAGES:
        text = hans(page)
        for wrong in ("串行", "比特", "矢量", "激活", "预设", "工作阶段", "核准", "范本"):
            assert wrong not in text, (page.name, wrong)
    assert zh_hans.convert("「自動核准工具呼叫」") == "“自动批准工具调用”"


def test_every_term_has_its_zh_hans_and_the_zh_hans_glossary_shows_that_column():
    tsv = terms_hook.TSV.read_text(encoding="utf-8")
    hant, simplified = dict(terms_hook.terms(tsv)), dict(terms_hook.terms(tsv, "zh-Hans"))
    assert hant.keys() == simplified.keys()
    assert (hant["sandbox"], simplified["sandbox"]) == ("沙盒", "沙箱")
    assert (hant["prefill"], simplified["prefill"]) == ("預填", "预填充")
    assert not traditional_left("".join(simplified.values()))
    table = terms_hook.table(tsv, "zh-Hans")
    assert "| sandbox | 沙箱 |" in table and "术语对照表 {#terms}" in table
    with pytest.raises(ValueError, match="zh-Hans"):
        terms_hook.terms("sandbox\t沙盒\n")


def test_the_navigation_and_description_are_zh_hant_s_converted():
    """mkdocs.yml's zh-Hans nav_translations and site_description are zh-Hant's through the conversion."""

    class Loader(yaml.SafeLoader):
        pass

    for tag in (
        "!",
        "tag:yaml.org,2002:python/",
    ):  # !ENV and the Python names: not what is compared here
        Loader.add_multi_constructor(tag, lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    i18n = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    by_locale = {lang["locale"]: lang for lang in i18n["languages"]}
    hant, simplified = by_locale["zh-Hant"], by_locale["zh-Hans"]
    assert simplified["nav_translations"] == {
        english: zh_hans.convert(title) for english, title in hant["nav_translations"].items()
    }
    assert simplified["site_description"] == zh_hans.convert(hant["site_description"])
    assert simplified["nav_translations"]["13. Running a tool: run_python's sandbox"].endswith(
        "沙箱"
    )
    assert {"lang": "zh-Hans", "link": "zh-Hans/", "name": "中文（简体）"} in config["extra"][
        "alternate"
    ]


def test_the_panels_zh_hans_strings_are_generated_and_current():
    assert zh_hans_assets.main(["--check"]) == 0, "python scripts/zh_hans_assets.py"
    strings = dict(
        re.findall(r'^  "([^"]+)": "(.*)",?$', zh_hans_assets.OUT.read_text(encoding="utf-8"), re.M)
    )
    assert strings["bar.looking"] == "正在寻找演示服务器…"
    assert not traditional_left("".join(strings.values()))


def test_each_bilingual_text_the_server_sends_gets_its_zh_hans():
    event = {
        "type": "error",
        "message": {"en": "No model", "zh": "示範伺服器沒有載入模型"},
        "n": [{"en": "a", "zh": "沙盒"}],
    }
    line = sse(event)
    assert '"zh-Hans": "演示服务器没有加载模型"' in line and '"zh-Hans": "沙箱"' in line
    assert "zh-Hans" not in event["message"]  # the event kept in the log is not changed


def test_private_use_characters_a_message_quotes_pass_through():
    # The held phrases' places are private-use characters; a message may quote any a request held (the fuzz
    # test's request made the server answer 500 here).
    from agentloop.zh_hans import convert

    assert convert("伺服器發生錯誤：\ue000\uf8ff 沙盒") == "服务器发生错误：\ue000\uf8ff 沙箱"
    # More phrases than places: the rest are OpenCC's alone.
    assert convert("沙盒" * 7000).startswith("沙箱")


def test_a_live_error_and_status_come_with_zh_hans(tmp_path):
    """The real server, no model (nothing loads): its status's error and a refusal carry zh-Hans, Simplified."""
    from demo_server.app import create_app

    port = free_port()
    srv = ServerThread(create_app(model="tiny-nothing", site_dir=tmp_path, port=port), port).start()
    try:
        c = Client(srv.url)
        error = c.status()["error"]
        assert error["zh-Hans"] == zh_hans.convert(error["zh"]) and error["zh-Hans"] != error["zh"]
        r = c.post("/api/runs", {"question": "Hi"})
        message = r.json()["message"]
        assert r.status_code == 409 and message["zh-Hans"] == zh_hans.convert(message["zh"])
        assert not traditional_left(message["zh-Hans"] + error["zh-Hans"])
        c.close()
    finally:
        srv.stop()
