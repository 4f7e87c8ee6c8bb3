"""A reader's media file as /inference/v1/generate takes it: a content part whose file is a data URL
(an image upright as PNG, sound as 16-bit mono WAV at the model's rate, a video as the file itself).

Left out: the server's side (it expands each placeholder and runs the encoders), and the tiny
samples the probe sends (media_probes.py)."""

from __future__ import annotations

import base64
import io
import json
import wave
from pathlib import Path

from agentloop import media

VIDEO_TYPES = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".avi": "video/x-msvideo",
}


def content_part(part: dict, rate: int) -> dict:
    """A media part as /inference/v1/generate takes it, the file in a data URL: an image upright as
    PNG (the EXIF turn is done here, as for transformers), sound decoded to 16-bit mono WAV at the
    model's rate, a video as the file itself."""
    path = Path(part["path"])
    if part["type"] == "image":
        out = io.BytesIO()
        media.load_image(path).save(out, "PNG")
        return {"type": "image_url", "url": data_url("image/png", out.getvalue())}
    if part["type"] == "audio":
        return {
            "type": "audio_url",
            "url": data_url("audio/wav", wav(media.load_audio(path, rate), rate)),
        }
    kind = VIDEO_TYPES.get(path.suffix.lower(), "video/mp4")
    return {"type": "video_url", "url": data_url(kind, path.read_bytes())}


def data_url(kind: str, data: bytes) -> str:
    """`data` as a data URL of MIME type `kind`: the file travels inside the request."""
    return f"data:{kind};base64," + base64.b64encode(data).decode()


def wav(samples, rate: int) -> bytes:
    """Samples in [-1, 1] as a 16-bit mono WAV file at `rate`."""
    pcm = (samples.clip(-1, 1) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def audio_rate(folder: Path) -> int:
    """The feature extractor's sampling rate, from the processor's settings (16 kHz if none says)."""
    for name in ("processor_config.json", "preprocessor_config.json"):
        path = folder / name
        if path.exists():
            settings = json.loads(path.read_text())
            rate = settings.get("feature_extractor", settings).get("sampling_rate")
            if rate:
                return int(rate)
    return 16000
