"""Make the sample files chapter 7's recordings attach (docs/chapters/runs/media/), from nothing: a photo stored
sideways with an EXIF orientation, a spoken question (espeak-ng) and a short WebM clip.

    python scripts/make_sample_media.py
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import media_files  # noqa: E402

OUT = ROOT / "docs" / "chapters" / "runs" / "media"


def photo() -> bytes:
    """A sun over a green hill, 640×480 upright, stored turned a quarter (EXIF orientation 6)."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (640, 480), (135, 190, 235))
    draw = ImageDraw.Draw(picture)
    draw.ellipse((440, 50, 560, 170), fill=(250, 210, 40))
    draw.ellipse((-200, 300, 840, 900), fill=(70, 150, 60))
    stored = picture.transpose(Image.Transpose.ROTATE_90)  # what orientation 6 turns back
    exif = Image.Exif()
    exif[0x0112] = 6
    out = io.BytesIO()
    stored.save(out, "JPEG", quality=85, exif=exif.tobytes())
    return out.getvalue()


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "photo.jpg").write_bytes(photo())
    with tempfile.TemporaryDirectory() as folder:
        (OUT / "question.wav").write_bytes(
            media_files.spoken("What is in the picture?", Path(folder))
        )
    (OUT / "clip.webm").write_bytes(
        media_files.video(frames=24, fps=8, width=320, height=240, fmt="webm")
    )
    for path in sorted(OUT.iterdir()):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
