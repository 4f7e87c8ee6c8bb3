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
CHINESE = (
    "zh-Hant",
    "zh-Hans",
)  # the zh-Hans figure: the zh-Hant labels through agentloop/zh_hans.py
# Everything a figure draws but its words: boxes, bars, arrows, leaders, paths.
SHAPE = re.compile(r"<(?:rect|polyline|polygon|line|path)\b[^>]*>")
TEXT = re.compile(r"<(text|title)\b[^>]*>([^<]*)</\1>")


def english_figures() -> list[Path]:
    return sorted(
        p for p in figures.OUT.glob("*.svg") if not p.stem.endswith(tuple(f".{c}" for c in CHINESE))
    )


def translation(path: Path, language: str = TRANSLATED) -> Path:
    return path.with_name(f"{path.stem}.{language}.svg")


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


def test_a_hand_drawn_figure_s_zh_hans_is_its_zh_hant_converted():
    assert figures.hand_drawn() == ["ch07-media-tokens"]
    for name in figures.hand_drawn():
        hant = (figures.OUT / f"{name}.zh-Hant.svg").read_text(encoding="utf-8")
        hans = (figures.OUT / f"{name}.zh-Hans.svg").read_text(encoding="utf-8")
        assert hans == figures.hand_drawn_in_zh_hans(hant), f"python scripts/figures.py {name}"
        assert "预填充" in hans and "預填" in hant


@pytest.mark.parametrize("language", CHINESE)
@pytest.mark.parametrize("path", english_figures(), ids=lambda p: p.stem)
def test_the_chinese_figure_has_the_same_shapes_and_its_own_words(path, language):
    """The zh-Hant figure is the English one with its labels translated, and the zh-Hans one those labels
    converted: the same boxes, bars and arrows in the same places (drawn by scripts/figures.py or by hand), and
    no label left in English prose."""
    zh = translation(path, language)
    assert zh.exists(), (
        f"{zh.name} is missing (python scripts/figures.py, or translate the hand-drawn one)"
    )
    english, chinese = path.read_text(encoding="utf-8"), zh.read_text(encoding="utf-8")
    assert SHAPE.findall(english) == SHAPE.findall(chinese)
    assert f'lang="{language}"' in chinese
    # The title (what a screen reader says) and at least a label are Chinese.
    titles = [t for tag, t in TEXT.findall(chinese) if tag == "title"]
    assert titles and any(subset_cjk_font.is_cjk(c) for c in titles[0]), titles
    assert any(
        subset_cjk_font.is_cjk(c) for tag, t in TEXT.findall(chinese) if tag == "text" for c in t
    )


@pytest.mark.parametrize(
    "language, face, font",
    [("zh-Hant", "'agentloop CJK'", "FONT"), ("zh-Hans", "'agentloop CJK SC'", "FONT_SC")],
)
def test_every_chinese_label_is_drawn_in_the_shipped_font(language, face, font):
    """Each zh-Hant figure names the book's CJK font first, each zh-Hans one its SC font, and that font holds
    every character it draws: the reader's system may have no CJK font at all (Debian's Chromium has none)."""
    held = subset_cjk_font.covered(getattr(subset_cjk_font, font))
    for zh in sorted(figures.OUT.glob(f"*.{language}.svg")):
        svg = zh.read_text(encoding="utf-8")
        assert f"font-family: {face}" in svg or f'font-family="{face}' in svg, zh.name
        used = {c for _, t in TEXT.findall(svg) for c in t if subset_cjk_font.is_cjk(c)}
        missing = "".join(sorted(used - held))
        assert not missing, (
            f"{zh.name}: {missing} not in the font: python scripts/subset_cjk_font.py"
        )
