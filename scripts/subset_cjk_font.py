"""Make the Chinese fonts the book ships: Noto Sans CJK TC, and SC for the zh-Hans edition, each cut down to the
characters it can show.

Debian's Chromium has no CJK font, and the book must read offline, so it carries its own
(docs/assets/fonts/, used by panel.css's @font-face with a unicode-range of exactly these
characters, for the panels and, in layout.css, every page's text). The characters are every CJK one
(ideographs, their punctuation, full-width forms) in the panels' modules (docs/assets/ and its
folders panel/ and stages/, vendor/ left out: mostly the string table, i18n.js), in the Chinese
texts the server sends (demo_server/ and agentloop/, e.g. errors and model descriptions), in the
model folders' examples.json, and in the zh-Hant edition: its pages (docs/**/*.zh-Hant.md), its
figures (*.zh-Hant.svg), its navigation titles (mkdocs.yml), the notes the build adds (docs/hooks/)
and the theme's own words in Traditional Chinese (Material's zh-Hant language partial). The source is Debian's fonts-noto-cjk
(`apt-get install fonts-noto-cjk`); pyftsubset (fontTools, with brotli for WOFF2) does the cut. The fonts' license,
the SIL Open Font License 1.1, travels with them in docs/assets/fonts/OFL.txt.

The zh-Hans edition is drawn in Noto Sans CJK SC (its glyphs are the mainland's forms; TC's differ in many common
characters): a second subset, of every character that edition can show, all of the texts above through the
conversion the edition is made by (agentloop/zh_hans.py), its figures (*.zh-Hans.svg), the panels' zh-Hans
strings and Material's Simplified Chinese words. panel.css and layout.css name it first on a zh-Hans page and in a
panel switched to zh-Hans; a character it lacks (a zh-Hant panel on that page) falls back to the TC subset.

    python scripts/subset_cjk_font.py          # write the font and its character list
    python scripts/subset_cjk_font.py --check  # exit 1 if a character used is not in its font

tests/test_i18n.py runs the check, so a new Chinese string without its glyph fails `make test`.
Leaves out: hinting and layout features beyond what the panels' text needs (kern, vertical forms).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FACE = "Noto Sans CJK TC"  # the Traditional Chinese face of the collection
FONT = ROOT / "docs" / "assets" / "fonts" / "noto-sans-cjk-tc-subset.woff2"
FACE_SC = "Noto Sans CJK SC"  # the Simplified Chinese face, for the zh-Hans edition
FONT_SC = ROOT / "docs" / "assets" / "fonts" / "noto-sans-cjk-sc-subset.woff2"
# CJK radicals to unified ideographs, compatibility ideographs, vertical and full-width forms, the
# supplementary ideographs: what the page's own fonts lack (emoji are left to the system's).
CJK = ((0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x2FFFF))


def modules() -> list[Path]:
    """The panels' own JavaScript modules: docs/assets/*.js and those in its folders, the vendored
    libraries (vendor/) left out."""
    assets = ROOT / "docs" / "assets"
    return sorted(p for p in assets.rglob("*.js") if "vendor" not in p.relative_to(assets).parts)


def theme_words(language: str = "zh-Hant") -> list[Path]:
    """Material's Chinese words (search, navigation, copy) in `language` ("zh" is its Simplified), where the theme
    is installed."""
    try:
        import material
    except ImportError:
        return []
    partial = Path(material.__file__).parent / f"templates/partials/languages/{language}.html"
    return [partial] if partial.exists() else []


def texts() -> list[Path]:
    """The files whose Chinese the book can show (the zh-Hans panel strings, generated, go to the SC subset)."""
    files = [p for p in modules() if p.name != "i18n-zh-Hans.js"]
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


def characters_sc() -> set[str]:
    """Every CJK character the zh-Hans edition can show: the zh-Hant texts converted as the edition converts
    them (a page as a page, with its kept parts), and what is written for it alone."""
    from agentloop import zh_hans

    used = set()
    for path in texts():
        text = path.read_text(encoding="utf-8")
        converted = (
            zh_hans.convert_markdown(text) if path.suffix == ".md" else zh_hans.convert(text)
        )
        used |= {c for c in converted if is_cjk(c)}
    docs = ROOT / "docs"
    for path in [*sorted(docs.rglob("*.zh-Hans.svg")), *theme_words("zh")]:
        used |= {c for c in path.read_text(encoding="utf-8") if is_cjk(c)}
    return used


def covered(font_path: Path) -> set[str]:
    from fontTools.ttLib import TTFont

    cmap = TTFont(font_path).getBestCmap()
    return {chr(code) for code in cmap}


def face_number(collection: Path, face: str = FACE) -> int:
    from fontTools.ttLib import TTCollection

    for i, font in enumerate(TTCollection(collection).fonts):
        if font["name"].getDebugName(1) == face:
            return i
    raise SystemExit(f"{collection} has no face named {face!r}")


def fonts() -> list[tuple[str, Path, set[str]]]:
    """(face, subset file, characters) of each font the book ships."""
    return [(FACE, FONT, characters()), (FACE_SC, FONT_SC, characters_sc())]


def subset() -> None:
    from fontTools import subset as pyftsubset

    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} is missing: apt-get install fonts-noto-cjk")
    for face, font, chars in fonts():
        used = "".join(sorted(chars))
        font.parent.mkdir(parents=True, exist_ok=True)
        pyftsubset.main(
            [
                str(SOURCE),
                f"--font-number={face_number(SOURCE, face)}",
                f"--text={used}",
                "--flavor=woff2",
                "--no-hinting",
                "--layout-features=",
                f"--output-file={font}",
            ]
        )
        print(f"{font.relative_to(ROOT)}: {len(used)} characters, {font.stat().st_size:,} bytes")


def check() -> int:
    status = 0
    for _face, font, chars in fonts():
        missing = chars - (covered(font) if font.exists() else set())
        if missing:
            print(f"not in {font.name}: {''.join(sorted(missing))}; run scripts/subset_cjk_font.py")
            status = 1
    return status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the font's coverage")
    sys.exit(check() if parser.parse_args().check else subset())
