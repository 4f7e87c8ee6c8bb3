"""A small SVG writer for the book's figures (scripts/figures.py): boxes, text, arrows and rows of tokens.

It follows nothing in particular; it leaves out everything a figure here does not use (gradients, paths other
than arrows, transforms). Colours are classes, not values: the text is `currentColor`, so a figure inlined in a
page takes the page's text colour in light and dark alike, and the fills are translucent tints of four hues that
read on either background. Sizes are in px of the figure's own width; the book shows a figure at most that wide,
so a 14 px label is never drawn smaller than the page's width allows (tests/test_figures_browser.py measures it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace"
# The book's shipped CJK font (docs/assets/panel.css's @font-face, a subset of Noto Sans CJK TC made by
# scripts/subset_cjk_font.py). Named first in a Chinese figure: its unicode-range holds only CJK characters,
# so Latin letters still come from the fonts after it, and the Chinese is the same on every system.
CJK = "'agentloop CJK'"
# The zh-Hans figures' first: the SC subset (mainland glyph forms), then the TC one.
CJK_SC = "'agentloop CJK SC', 'agentloop CJK'"
TEXT = 14  # px: the body size of every label
SMALL = 12  # px: the smallest size any label is drawn at
HUES = ("a", "b", "c", "d", "e")  # blue, orange, green, red, grey

STYLE = """
svg.alf {{ font-family: {font}; font-size: {text}px; }}
.alf text {{ fill: currentColor; }}
.alf .mono {{ font-family: {mono}; }}
.alf .small {{ font-size: {small}px; }}
.alf .bold {{ font-weight: 600; }}
.alf .muted {{ opacity: 0.72; }}
.alf .line {{ stroke: currentColor; fill: none; stroke-width: 1.5; }}
.alf .dash {{ stroke-dasharray: 5 4; }}
.alf .head {{ fill: currentColor; stroke: none; }}
.alf .box {{ stroke: currentColor; stroke-opacity: 0.55; stroke-width: 1.2; }}
.alf .f-none {{ fill: none; }}
.alf .f-a {{ fill: rgba(68, 138, 255, 0.22); }}
.alf .f-b {{ fill: rgba(255, 145, 0, 0.24); }}
.alf .f-c {{ fill: rgba(0, 200, 83, 0.22); }}
.alf .f-d {{ fill: rgba(255, 82, 82, 0.24); }}
.alf .f-e {{ fill: rgba(128, 128, 128, 0.16); }}
.alf .s-a {{ stroke: rgb(68, 138, 255); }}
.alf .s-b {{ stroke: rgb(255, 145, 0); }}
.alf .s-c {{ stroke: rgb(0, 170, 70); }}
.alf .s-d {{ stroke: rgb(235, 70, 70); }}
.alf .halo {{ paint-order: stroke; stroke: var(--md-default-bg-color, #fff); stroke-width: 4px;
  stroke-linejoin: round; }}
.alf .leader {{ stroke: currentColor; stroke-width: 0.75; opacity: 0.55; }}
.alf .bar {{ fill: rgb(68, 138, 255); }}
.alf .bar-b {{ fill: rgb(255, 145, 0); }}
.alf .bar-off {{ fill: currentColor; opacity: 0.18; }}
"""


def _n(x: float) -> str:
    # Two decimals at most, no trailing zeros: the files stay small and the same on every machine.
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


@dataclass
class Figure:
    name: str
    width: int
    height: int
    title: str  # what a screen reader says; the page's caption says it too
    parts: list[str] = field(default_factory=list)
    language: str = (
        "en"  # "zh-Hant", "zh-Hans": the labels are Chinese, drawn in the shipped CJK font
    )

    def add(self, svg: str) -> None:
        self.parts.append(svg)

    def text(self, x, y, s, size=None, cls="", anchor="start", opacity=None) -> None:
        classes = " ".join(c for c in (cls, "small" if size == SMALL else "") if c)
        attrs = f' class="{classes}"' if classes else ""
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if opacity is not None:
            attrs += f' opacity="{_n(opacity)}"'
        self.add(f'<text x="{_n(x)}" y="{_n(y)}"{attrs}>{escape(s)}</text>')

    def note(self, y, s) -> None:
        """A muted line of small text at the left edge: what a figure's data is and where it came from."""
        self.text(8, y, s, size=SMALL, cls="muted")

    def rect(self, x, y, w, h, hue="e", r=6, cls="box", opacity=None, stroke=None) -> None:
        fill = f"f-{hue}" if hue else "f-none"
        extra = f" s-{stroke}" if stroke else ""
        op = f' fill-opacity="{_n(opacity)}"' if opacity is not None else ""
        self.add(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="{_n(r)}" '
            f'class="{cls} {fill}{extra}"{op}/>'
        )

    def bar(self, x, y, w, h, cls="bar") -> None:
        self.add(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0))}" height="{_n(h)}" class="{cls}"/>'
        )

    def box(self, x, y, w, h, label, hue="e", sub=None, mono=False, stroke=None) -> None:
        """A rounded box with a centred label and an optional smaller second line."""
        self.rect(x, y, w, h, hue, stroke=stroke)
        cls = "mono" if mono else "bold"
        if sub:
            self.text(x + w / 2, y + h / 2 - 3, label, cls=cls, anchor="middle")
            self.text(x + w / 2, y + h / 2 + 14, sub, size=SMALL, anchor="middle", cls="muted")
        else:
            self.text(x + w / 2, y + h / 2 + 5, label, cls=cls, anchor="middle")

    def arrow(self, points: list[tuple[float, float]], label=None, at=0.5, dash=False, dy=-6):
        """A polyline ending in an arrowhead (a polygon, not a marker: markers do not take currentColor)."""
        d = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self.add(f'<polyline points="{d}" class="line{" dash" if dash else ""}"/>')
        (x0, y0), (x1, y1) = points[-2], points[-1]
        length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1e-9)
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        a = (x1 - 9 * ux + 4.5 * uy, y1 - 9 * uy - 4.5 * ux)
        b = (x1 - 9 * ux - 4.5 * uy, y1 - 9 * uy + 4.5 * ux)
        self.add(
            f'<polygon points="{_n(x1)},{_n(y1)} {_n(a[0])},{_n(a[1])} {_n(b[0])},{_n(b[1])}" '
            'class="head"/>'
        )
        if label:
            # On the segment that holds the point `at` of the way along the first segment's span.
            (sx, sy), (ex, ey) = points[0], points[1]
            self.text(
                sx + (ex - sx) * at, sy + (ey - sy) * at + dy, label, size=SMALL, anchor="middle"
            )

    def leader(self, x, y0, y1) -> None:
        """A thin vertical line from (x, y0) to (x, y1): a label's leader to the bar it names."""
        self.add(f'<line x1="{_n(x)}" y1="{_n(y0)}" x2="{_n(x)}" y2="{_n(y1)}" class="leader"/>')

    def svg(self) -> str:
        body = "\n".join(self.parts)
        english = self.language == "en"
        cjk = CJK_SC if self.language == "zh-Hans" else CJK
        style = STYLE.format(
            font=FONT if english else f"{cjk}, {FONT}",
            mono=MONO if english else f"{cjk}, {MONO}",
            text=TEXT,
            small=SMALL,
        )
        lang = "" if english else f' lang="{self.language}"'
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="alf"{lang} viewBox="0 0 {self.width} '
            f'{self.height}" width="{self.width}" height="{self.height}" role="img" '
            f'aria-label="{escape(self.title)}" data-figure="{self.name}">\n'
            f"<title>{escape(self.title)}</title>\n<style>{style}</style>\n{body}\n</svg>\n"
        )


def text_width(s: str, size: int = TEXT, mono: bool = False) -> float:
    """An estimate of a label's width, enough to size a box around it (a wide glyph counts double)."""
    per = 0.61 if mono else 0.56
    return sum((2 if ord(c) > 0x2E80 else 1) for c in s) * size * per
