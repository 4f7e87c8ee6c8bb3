"""Every figure in docs/assets/figures/ is what scripts/figures.py draws now, from the recordings, the tiny model,
sample() and the code's constants: a figure cannot drift from the code it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import figures

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_the_figure_is_current(name):
    path = figures.OUT / f"{name}.svg"
    assert path.exists(), f"{path} is missing: python scripts/figures.py {name}"
    assert path.read_text(encoding="utf-8") == figures.draw(name), (
        f"{path.name} is stale: python scripts/figures.py {name}"
    )


def test_every_figure_file_is_shown_on_a_page():
    # A figure may also be drawn by hand (an SVG whose text is currentColor); none lies unused.
    files = {p.stem for p in figures.OUT.glob("*.svg")}
    assert set(figures.FIGURES) <= files
    pages = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    assert [n for n in sorted(files) if f"assets/figures/{n}.svg" not in pages] == []
