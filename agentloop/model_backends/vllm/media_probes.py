"""The tiny synthetic files the media probe sends, one of each kind: a grey square, half a second of
silence, four grey frames, each made here so that asking a server what it reads needs no file of
the reader's.

Left out: what is done with the answer (probe.py)."""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib

from agentloop.model_backends.vllm.content_parts import data_url


def sample_part(kind: str, rate: int) -> dict:
    """A tiny file of each kind, for the probe: a grey square, half a second of silence, four frames."""
    if kind == "image":
        return {"type": "image_url", "url": tiny_png()}
    if kind == "audio":
        return {"type": "audio_url", "url": "data:audio/wav;base64," + tiny_wav(rate=rate)}
    return {"type": "video_url", "url": data_url("video/mp4", tiny_mp4())}


def tiny_mp4(frames: int = 4, side: int = 32) -> bytes:
    """Four grey frames at 4 a second, MPEG-4 in an MP4, encoded by PyAV."""
    import av
    import numpy as np

    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=4)
        stream.width = stream.height = side
        stream.pix_fmt = "yuv420p"
        for _ in range(frames):
            frame = av.VideoFrame.from_ndarray(
                np.full((side, side, 3), 128, np.uint8), format="rgb24"
            )
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def tiny_png(side: int = 32) -> str:
    """A grey square as a PNG data URL, written by hand (zlib and struct) so nothing is installed
    for it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\x80" * (3 * side) for _ in range(side))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(png).decode()


def tiny_wav(seconds: float = 0.5, rate: int = 16000) -> str:
    """Half a second of silence as base64 WAV."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * int(seconds * rate))
    return base64.b64encode(out.getvalue()).decode()
