"""Media files made by the tests: images with an EXIF orientation, a sine tone and spoken words through PyAV
(espeak-ng speaks, sox is not needed), a short video encoded with PyAV, and the bad files chapter 7 refuses."""

from __future__ import annotations

import importlib.util
import io
import shutil
import struct
import subprocess
import zlib
from fractions import Fraction
from pathlib import Path

import numpy as np


def require_torchvision() -> None:
    """transformers' video processors import torchvision: without it the models read text only."""
    assert importlib.util.find_spec("torchvision"), (
        "torchvision is missing: run `make setup` (pyproject.toml pins torchvision==0.28.0)"
    )


def image(
    width: int = 96, height: int = 64, orientation: int | None = None, fmt: str = "PNG"
) -> bytes:
    """A picture whose left half is red and right half blue, so a turn shows in the pixels."""
    from PIL import Image

    pixels = np.zeros((height, width, 3), np.uint8)
    pixels[:, : width // 2] = (220, 30, 30)
    pixels[:, width // 2 :] = (30, 30, 220)
    out = io.BytesIO()
    picture = Image.fromarray(pixels)
    if orientation is None:
        picture.save(out, fmt)
    else:
        exif = Image.Exif()
        exif[0x0112] = orientation  # Orientation
        picture.save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def tone(seconds: float, rate: int = 22050, hz: float = 440.0, fmt: str = "wav") -> bytes:
    """A sine tone, stereo, at a rate other than the model's, encoded by PyAV."""
    import av

    t = np.arange(int(seconds * rate)) / rate
    samples = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    stereo = np.stack([samples, samples])
    out = io.BytesIO()
    with av.open(out, "w", format=fmt) as container:
        stream = container.add_stream("pcm_s16le" if fmt == "wav" else "flac", rate=rate)
        stream.layout = "stereo"
        frame = av.AudioFrame.from_ndarray(stereo.reshape(1, -1), format="flt", layout="stereo")
        frame.rate = rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def spoken(words: str, folder: Path) -> bytes:
    """The words spoken by espeak-ng, as WAV."""
    espeak = shutil.which("espeak-ng")
    assert espeak, "espeak-ng is a Debian package of the Makefile's SYSTEM_PACKAGES"
    path = folder / "spoken.wav"
    subprocess.run([espeak, "-w", str(path), words], check=True, capture_output=True)
    return path.read_bytes()


def video(
    frames: int = 12, fps: int = 6, width: int = 64, height: int = 48, fmt: str = "mp4"
) -> bytes:
    """A colour bar that moves across the picture, encoded with PyAV: MPEG-4 in an MP4, or VP8 in a WebM
    (which browsers play)."""
    import av

    out = io.BytesIO()
    with av.open(out, "w", format=fmt) as container:
        stream = container.add_stream("mpeg4" if fmt == "mp4" else "libvpx", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            pixels = np.full((height, width, 3), 40, np.uint8)
            x = i * width // max(frames, 1)
            pixels[:, x : x + width // 4] = (240, 200, 40)
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def many_frames(
    n: int, width: int = 1920, height: int = 1080, fps: int = 30, headers: bool = True
) -> bytes:
    """n frames of one still picture in a WebM, cheap to make however many: a keyframe, then one encoded frame that
    changes nothing, muxed again n - 1 times (issue 40's 6,000 1080p frames fit in 388 KB). Without `headers` it is
    written as to a pipe, which cannot seek back: its headers then say neither its duration nor its frames."""
    import av

    key, still = _key_and_still(width, height, fps)
    out = io.BytesIO()
    sink = out if headers else _Pipe(out)
    with av.open(sink, "w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(n):
            packet = av.Packet(key if i == 0 else still)
            packet.stream, packet.time_base = stream, Fraction(1, fps)
            packet.pts = packet.dts = i
            packet.is_keyframe = i == 0
            container.mux(packet)
    return out.getvalue()


def _key_and_still(width: int, height: int, fps: int) -> tuple[bytes, bytes]:
    """A VP8 keyframe of a grey picture, and the frame after it, which changes nothing."""
    import av

    packets = []
    with av.open(io.BytesIO(), "w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"deadline": "realtime", "lag-in-frames": "0", "auto-alt-ref": "0"}
        grey = av.VideoFrame.from_ndarray(np.full((height, width, 3), 90, np.uint8), format="rgb24")
        for _ in range(2):
            packets += stream.encode(grey)
        packets += stream.encode(None)
    return bytes(packets[0]), bytes(packets[1])


class _Pipe:
    """A file PyAV can only write to, as a pipe: no seek, so the muxer cannot go back to fill in its headers."""

    def __init__(self, out: io.BytesIO):
        self.write = out.write


# -- bad files ------------------------------------------------------------------------------------------------------


def truncated_png() -> bytes:
    data = image(200, 200)
    return data[: len(data) // 2]


def png_claiming(width: int, height: int) -> bytes:
    """A valid PNG header that claims width×height pixels, with one tiny compressed row: a decompression bomb's
    shape (the pixels would be made only when decoded)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def wav_claiming(n_bytes: int) -> bytes:
    """A WAV header whose data chunk claims n_bytes (2 GB) and holds none."""
    fmt = struct.pack("<HHIIHH", 1, 1, 16000, 32000, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + n_bytes)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", n_bytes)
    )
