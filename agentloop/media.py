"""Attachments: a file checked by its content, saved in the conversation's folder, decoded once (chapter 7).

A file becomes an Attachment when its bytes are an image, a sound or a video that decodes all the way through
(its name only has to agree); anything else is a plain file, which run_python reads in /data. A kind the model
cannot read (sound for Qwen3.5) is saved as a plain file too. The decoders give what the checkpoint's processor
wants: an image as RGB, turned upright by its EXIF orientation; sound as mono float samples at the feature
extractor's rate, decoded by PyAV; a video as at most 64 frames taken evenly, at most 768 pixels on the longer
side, with the frame rate of the frames kept, so the times the processor writes beside them are right. Each file is
decoded once and reused by every step after (the prompt is encoded again each step).

The conversation's user turn is then a list of content parts in Hugging Face's format, the media first in the
order they were attached, which is also the order of their placeholders in the rendered prompt.
Left out: images inside a video's audio track (a video's sound is not heard), subtitles, and HDR colour.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MEDIA = ("image", "audio", "video")
MAX_BYTES = 64 * 1024 * 1024  # one attachment
MAX_PIXELS = (
    50_000_000  # an image, or a video frame, before it is shrunk: more is a decompression bomb
)
MAX_SECONDS = 600  # sound or video decoded: the models hear 30 s and see 32 frames at most
MAX_FRAMES = 64  # of a video, taken evenly
MAX_SIDE = 768  # pixels on a video frame's longer side
DECODED_KEPT = 16  # decoded files kept in memory for the steps after

# What a file's name says it is; the content decides, and a name that disagrees with it is refused.
NAMED = {
    **dict.fromkeys(("png", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff"), "image"),
    **dict.fromkeys(("wav", "mp3", "flac", "ogg", "oga", "opus", "m4a", "aac"), "audio"),
    **dict.fromkeys(("mp4", "m4v", "mov", "webm", "mkv", "avi"), "video"),
}
KIND_NAMES = {
    "image": ("an image", "圖片"),
    "audio": ("a sound", "聲音"),
    "video": ("a video", "影片"),
}


class MediaError(ValueError):
    """A file that cannot be attached, said in English and Traditional Chinese."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh

    def message(self) -> dict:
        return {"en": self.en, "zh": self.zh}


@dataclass(frozen=True)
class Attachment:
    """A file saved in the conversation's folder: `kind` is image, audio, video, or file (a plain file)."""

    kind: str
    name: str
    path: str
    why_plain: dict | None = (
        None  # a medium the model cannot read: why it stays a plain file, {en, zh}
    )

    def part(self) -> dict | None:
        """Its content part in the user turn: media only (a plain file is named in the text)."""
        return {"type": self.kind, "path": self.path} if self.kind in MEDIA else None


# -- saving ------------------------------------------------------------------------------------------------------


def check_all(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes, str]]:
    """Every file checked (name, bytes, kind), before any is saved: one bad file and none is."""
    return [(name, data, check(data, name)) for name, data in files]


def save_checked(
    checked: list[tuple[str, bytes, str]], folder: Path, readable: Collection[str]
) -> list[Attachment]:
    return [_write(data, name, kind, folder, readable) for name, data, kind in checked]


def save(data: bytes, name: str, folder: Path, readable: Collection[str]) -> Attachment:
    """Check the file by its content, then write it into `folder` whole or not at all. `readable` are the
    kinds the model takes; another medium is kept as a plain file, with why."""
    return _write(data, name, check(data, name), folder, readable)


def _write(
    data: bytes, name: str, kind: str, folder: Path, readable: Collection[str]
) -> Attachment:
    path = _unique(folder, _safe_name(name))
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", delete=False) as out:
        out.write(data)
    os.replace(out.name, path)  # atomic: a reader of /data never sees half a file
    if kind in MEDIA and kind not in readable:
        en, zh = KIND_NAMES[kind]
        why = {
            "en": f"this model reads no {en.split()[-1]}: {path.name} is a plain file in /data",
            "zh": f"這個模型不讀{zh}：{path.name} 是 /data 裡的一般檔案",
        }
        return Attachment("file", path.name, str(path), why)
    return Attachment(kind, path.name, str(path))


def check(data: bytes, name: str) -> str:
    """The file's kind by its content, after decoding it all the way (a cut-off file fails here, not in a
    step). A name that says a medium the content is not is refused."""
    if not data:
        raise MediaError(f"{name} is empty (0 bytes).", f"{name} 是空的（0 位元組）。")
    if len(data) > MAX_BYTES:
        raise MediaError(
            f"{name} is {len(data) / 2**20:.0f} MiB; an attachment may be {MAX_BYTES // 2**20} MiB.",
            f"{name} 有 {len(data) / 2**20:.0f} MiB；附件最多 {MAX_BYTES // 2**20} MiB。",
        )
    kind = sniff(data)
    named = NAMED.get(Path(name).suffix.lower().lstrip("."))
    if named and kind != named:
        en, zh = KIND_NAMES[named]
        raise MediaError(
            f"{name} is named as {en}, but its content is not {en} that can be read.",
            f"{name} 的檔名是{zh}，但內容不是可讀的{zh}。",
        )
    if data[:4] == b"RIFF" and (claimed := int.from_bytes(data[4:8], "little") + 8) > len(data):
        raise MediaError(
            f"{name}'s header claims {claimed:,} bytes, but the file holds {len(data):,}: it is cut off.",
            f"{name} 的檔頭聲稱有 {claimed:,} 位元組，但檔案只有 {len(data):,}：它被截斷了。",
        )
    if kind in MEDIA:
        try:
            DECODERS[kind](io.BytesIO(data))
        except MediaError as e:
            raise MediaError(f"{name}: {e.en}", f"{name}：{e.zh}") from e
        except Exception as e:  # every decoder's own failure, said once for the reader
            en, zh = KIND_NAMES[kind]
            raise MediaError(
                f"{name} looks like {en} but does not decode: {e}",
                f"{name} 看起來是{zh}，但無法解碼：{e}",
            ) from e
    return kind


def sniff(data: bytes) -> str:
    """image, audio or video by what Pillow or PyAV can open from the bytes; file for anything else."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)):
            return "image"
    except Exception:
        pass
    import av

    try:
        with av.open(io.BytesIO(data)) as container:
            if container.streams.video and container.format.name not in ("image2", "png_pipe"):
                return "video"
            if container.streams.audio:
                return "audio"
    except Exception:
        pass
    return "file"


def _safe_name(name: str) -> str:
    base = re.sub(r"[^\w.\-]+", "_", Path(name).name).strip("._") or "attachment"
    return base[:100]


def _unique(folder: Path, name: str) -> Path:
    path, stem, suffix, n = folder / name, Path(name).stem, Path(name).suffix, 2
    while path.exists():
        path, n = folder / f"{stem}-{n}{suffix}", n + 1
    return path


def summary(attachment: Attachment) -> dict:
    """What the panel shows of a saved attachment; for a video, the time of each frame kept."""
    out = {"name": attachment.name, "kind": attachment.kind, "why_plain": attachment.why_plain}
    if attachment.kind == "video":
        frames, metadata = load_video(attachment.path)
        out["frames"] = [round(i / metadata["fps"], 3) for i in range(len(frames))]
    return out


# -- the conversation's parts -------------------------------------------------------------------------------------


def user_content(text: str, attachments: list[Attachment]) -> str | list[dict]:
    """The user turn: the question alone, or its media parts first, in the order attached, then the text,
    which names the plain files so the model knows where to find them."""
    files = [a for a in attachments if a.kind not in MEDIA]
    if files:
        text += "\n\nAttached: " + ", ".join(f"/data/{a.name}" for a in files)
    media = [a.part() for a in attachments if a.kind in MEDIA]
    return [*media, {"type": "text", "text": text}] if media else text


def parts(messages: list[dict]) -> list[dict]:
    """Every media part of the conversation, in the order the template writes their placeholders."""
    return [
        part
        for m in messages
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if part.get("type") in MEDIA
    ]


# -- decoding, once per file ---------------------------------------------------------------------------------------


_decoded: OrderedDict[tuple, object] = OrderedDict()
_decoded_lock = threading.Lock()


def _once(kind: str, path: str | Path, *args):
    """The decoded file, from memory when this step's prompt holds a file an earlier step decoded."""
    stat = os.stat(path)
    key = (kind, str(path), stat.st_mtime_ns, stat.st_size, *args)
    with _decoded_lock:
        if key in _decoded:
            _decoded.move_to_end(key)
            return _decoded[key]
    value = DECODERS[kind](path, *args)
    with _decoded_lock:
        _decoded[key] = value
        while len(_decoded) > DECODED_KEPT:
            _decoded.popitem(last=False)
    return value


def load_image(path: str | Path):
    return _once("image", path)


def load_audio(path: str | Path, rate: int = 16000) -> np.ndarray:
    return _once("audio", path, rate)


def load_video(path: str | Path) -> tuple[np.ndarray, dict]:
    return _once("video", path)


def decode_image(source):
    """RGB, upright: a photo's EXIF orientation turns it as a camera's viewer would."""
    from PIL import Image, ImageOps

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # above: DecompressionBombWarning; twice it: an error
    with Image.open(source) as image:
        if image.width * image.height > MAX_PIXELS:
            raise _too_many_pixels(image.width, image.height)
        image.load()  # a cut-off file fails here
        return ImageOps.exif_transpose(image).convert("RGB")


def decode_audio(source, rate: int = 16000) -> np.ndarray:
    """The first sound track as mono float32 samples at `rate`, mixed down and resampled by PyAV."""
    import av

    with av.open(source) as container:
        if not container.streams.audio:
            raise MediaError("It has no sound track.", "它沒有聲音軌。")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        chunks, n = [], 0
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray().reshape(-1))
                n += chunks[-1].size
            if n > MAX_SECONDS * rate:
                break
        for out in resampler.resample(None):  # what the resampler still holds
            chunks.append(out.to_ndarray().reshape(-1))
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    if samples.size == 0:
        raise MediaError("It holds no sound (0 samples).", "它沒有任何聲音（0 個取樣）。")
    return samples[: MAX_SECONDS * rate].astype(np.float32)


def decode_video(source) -> tuple[np.ndarray, dict]:
    """At most MAX_FRAMES frames taken evenly, as RGB uint8 (frames, height, width, 3), no more than MAX_SIDE
    on the longer side, and the metadata the processor reads: the frame rate of the frames kept, so the time
    it writes beside each is where that frame was in the video."""
    import av

    with av.open(source) as container:
        stream = container.streams.video[0]
        total = sum(1 for _ in container.decode(stream))  # the container's own count can be missing
        if total == 0:
            raise MediaError("It holds no video frames.", "它沒有任何影格。")
        rate = float(stream.average_rate or stream.guessed_rate or 24)
    keep = set(np.linspace(0, total - 1, min(total, MAX_FRAMES)).round().astype(int).tolist())
    frames = []
    if hasattr(source, "seek"):
        source.seek(0)
    with av.open(source) as container:
        for i, frame in enumerate(container.decode(container.streams.video[0])):
            if i in keep:
                frames.append(_shrunk(frame))
    duration = total / rate
    metadata = {
        "total_num_frames": len(frames),
        "fps": len(frames) / duration,  # of the frames kept: frame i is at i / fps seconds
        "duration": duration,
        "width": frames[0].shape[1],
        "height": frames[0].shape[0],
        "video_backend": "pyav",
    }
    return np.stack(frames), metadata


def _shrunk(frame) -> np.ndarray:
    if frame.width * frame.height > MAX_PIXELS:
        raise _too_many_pixels(frame.width, frame.height)
    scale = min(1.0, MAX_SIDE / max(frame.width, frame.height))
    width, height = max(1, round(frame.width * scale)), max(1, round(frame.height * scale))
    return frame.to_ndarray(format="rgb24", width=width, height=height)


def _too_many_pixels(width: int, height: int) -> MediaError:
    return MediaError(
        f"It claims {width}×{height} pixels, more than the {MAX_PIXELS:,} allowed (a decompression bomb?).",
        f"它聲稱有 {width}×{height} 像素，超過上限 {MAX_PIXELS:,}（可能是解壓縮炸彈）。",
    )


DECODERS = {"image": decode_image, "audio": decode_audio, "video": decode_video}
