"""Make the Chinese font the book ships: Noto Sans CJK TC cut down to the characters it can show.

Debian's Chromium has no CJK font, and the book must read offline, so it carries its own
(docs/assets/fonts/, used by panel.css's @font-face with a unicode-range of exactly these
characters, for the panels and, in layout.css, every page's text). The characters are every CJK one
(ideographs, their punctuation, full-width forms) in the panels' modules (docs/assets/ and its
folders panel/ and stages/, vendor/ left out: mostly the string table, i18n.js), in the Chinese
texts the server sends (demo_server/ and agentloop/, e.g. errors and model descriptions), in the
model folders' examples.json, and in the zh-Hant edition: its pages (docs/**/*.zh-Hant.md), its
figures (*.zh-Hant.svg), its navigation titles (mkdocs.yml), the notes the build adds (docs/hooks/)
and the theme's own words in Traditional Chinese (Material's zh-Hant language partial). The source is Debian's fonts-noto-cjk
(`apt-get install fonts-noto-cjk`); pyftsubset (fontTools, with brotli for WOFF2) does the cut.

    python scripts/subset_cjk_font.py          # write the font and its character list
    python scripts/subset_cjk_font.py --check  # exit 1 if a character used is not in the font

tests/test_i18n.py runs the check, so a new Chinese string without its glyph fails `make test`.
Leaves out: hinting and layout features beyond what the panels' text needs (kern, vertical forms).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FACE = "Noto Sans CJK TC"  # the Traditional Chinese face of the collection
FONT = ROOT / "docs" / "assets" / "fonts" / "noto-sans-cjk-tc-subset.woff2"
# CJK radicals to unified ideographs, compatibility ideographs, vertical and full-width forms, the
# supplementary ideographs: what the page's own fonts lack (emoji are left to the system's).
CJK = ((0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x2FFFF))


def modules() -> list[Path]:
    """The panels' own JavaScript modules: docs/assets/*.js and those in its folders, the vendored
    libraries (vendor/) left out."""
    assets = ROOT / "docs" / "assets"
    return sorted(p for p in assets.rglob("*.js") if "vendor" not in p.relative_to(assets).parts)


def theme_words() -> list[Path]:
    """Material's Traditional Chinese words (search, navigation, copy), where the theme is installed."""
    try:
        import material
    except ImportError:
        return []
    partial = Path(material.__file__).parent / "templates/partials/languages/zh-Hant.html"
    return [partial] if partial.exists() else []


def texts() -> list[Path]:
    """The files whose Chinese the book can show."""
    files = modules()
    for folder in ("demo_server", "agentloop"):
        files += sorted((ROOT / folder).rglob("*.py"))
    files += sorted((ROOT / "models").glob("*/examples.json"))
    docs = ROOT / "docs"
    files += sorted(docs.rglob("*.zh-Hant.md")) + sorted(docs.rglob("*.zh-Hant.svg"))
    files += [ROOT / "mkdocs.yml", *sorted((docs / "hooks").glob("*.py")), *theme_words()]
    return files


def is_cjk(c: str) -> bool:
    return any(low <= ord(c) <= high for low, high in CJK)


def characters() -> set[str]:
    used = set()
    for path in texts():
        used |= {c for c in path.read_text(encoding="utf-8") if is_cjk(c)}
    return used


def covered(font_path: Path) -> set[str]:
    from fontTools.ttLib import TTFont

    cmap = TTFont(font_path).getBestCmap()
    return {chr(code) for code in cmap}


def face_number(collection: Path) -> int:
    from fontTools.ttLib import TTCollection

    for i, font in enumerate(TTCollection(collection).fonts):
        if font["name"].getDebugName(1) == FACE:
            return i
    raise SystemExit(f"{collection} has no face named {FACE!r}")


def subset() -> None:
    from fontTools import subset as pyftsubset

    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} is missing: apt-get install fonts-noto-cjk")
    used = "".join(sorted(characters()))
    FONT.parent.mkdir(parents=True, exist_ok=True)
    pyftsubset.main(
        [
            str(SOURCE),
            f"--font-number={face_number(SOURCE)}",
            f"--text={used}",
            "--flavor=woff2",
            "--no-hinting",
            "--layout-features=",
            f"--output-file={FONT}",
        ]
    )
    print(f"{FONT.relative_to(ROOT)}: {len(used)} characters, {FONT.stat().st_size:,} bytes")


def check() -> int:
    missing = characters() - covered(FONT)
    if missing:
        print(f"not in {FONT.name}: {''.join(sorted(missing))}; run scripts/subset_cjk_font.py")
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the font's coverage")
    sys.exit(check() if parser.parse_args().check else subset())
