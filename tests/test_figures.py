"""Every figure in docs/assets/figures/ is what scripts/figures.py draws now, from the recordings, the tiny model,
sample() and the code's constants: a figure cannot drift from the code it shows. Each figure has its zh-Hant
edition beside it (NAME.zh-Hant.svg), on the same shapes, every label in a font the book ships."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts import figures, subset_cjk_font

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = "zh-Hant"
# Everything a figure draws but its words: boxes, bars, arrows, leaders, paths.
SHAPE = re.compile(r"<(?:rect|polyline|polygon|line|path)\b[^>]*>")
TEXT = re.compile(r"<(text|title)\b[^>]*>([^<]*)</\1>")


def english_figures() -> list[Path]:
    return sorted(p for p in figures.OUT.glob("*.svg") if not p.stem.endswith(f".{TRANSLATED}"))


def translation(path: Path) -> Path:
    return path.with_name(f"{path.stem}.{TRANSLATED}.svg")


@pytest.mark.parametrize("language", figures.LANGUAGES)
@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_the_figure_is_current(name, language):
    path = figures.OUT / figures.file_name(name, language)
    assert path.exists(), f"{path} is missing: python scripts/figures.py {name}"
    assert path.read_text(encoding="utf-8") == figures.draw(name, language), (
        f"{path.name} is stale: python scripts/figures.py {name}"
    )


def test_every_figure_file_is_shown_on_a_page():
    # A figure may also be drawn by hand (an SVG whose text is currentColor); none lies unused.
    files = {p.stem for p in english_figures()}
    assert set(figures.FIGURES) <= files
    pages = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    assert [n for n in sorted(files) if f"assets/figures/{n}.svg" not in pages] == []


@pytest.mark.parametrize("path", english_figures(), ids=lambda p: p.stem)
def test_the_chinese_figure_has_the_same_shapes_and_its_own_words(path):
    """The zh-Hant figure is the English one with its labels translated: the same boxes, bars and arrows in the
    same places (drawn by scripts/figures.py or by hand), and no label left in English prose."""
    zh = translation(path)
    assert zh.exists(), (
        f"{zh.name} is missing (python scripts/figures.py, or translate the hand-drawn one)"
    )
    english, chinese = path.read_text(encoding="utf-8"), zh.read_text(encoding="utf-8")
    assert SHAPE.findall(english) == SHAPE.findall(chinese)
    assert f'lang="{TRANSLATED}"' in chinese
    # The title (what a screen reader says) and at least a label are Chinese.
    titles = [t for tag, t in TEXT.findall(chinese) if tag == "title"]
    assert titles and any(subset_cjk_font.is_cjk(c) for c in titles[0]), titles
    assert any(
        subset_cjk_font.is_cjk(c) for tag, t in TEXT.findall(chinese) if tag == "text" for c in t
    )


def test_every_chinese_label_is_drawn_in_the_shipped_font():
    """Each zh-Hant figure names the book's CJK font first, and that font holds every character it draws: the
    reader's system may have no CJK font at all (Debian's Chromium has none)."""
    held = subset_cjk_font.covered(subset_cjk_font.FONT)
    for zh in sorted(figures.OUT.glob(f"*.{TRANSLATED}.svg")):
        svg = zh.read_text(encoding="utf-8")
        assert "font-family: 'agentloop CJK'" in svg or "font-family=\"'agentloop CJK'" in svg, (
            zh.name
        )
        used = {c for _, t in TEXT.findall(svg) for c in t if subset_cjk_font.is_cjk(c)}
        missing = "".join(sorted(used - held))
        assert not missing, (
            f"{zh.name}: {missing} not in the font: python scripts/subset_cjk_font.py"
        )
