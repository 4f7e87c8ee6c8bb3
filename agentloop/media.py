"""Attachments: a file checked by its content, saved in the conversation's folder, decoded once (chapter 7).

A file becomes an Attachment when its bytes are an image, a sound or a video that decodes all the way through
(its name only has to agree); anything else is a plain file, which run_python reads in /data. A kind the model
cannot read (sound for Qwen3.5) is saved as a plain file too. The decoders give what the checkpoint's processor
wants: an image as RGB, turned upright by its EXIF orientation; sound as mono float samples at the feature
extractor's rate, decoded by PyAV; a video as at most 64 frames taken evenly, at most 768 pixels on the longer
side, with the frame rate of the frames kept, so the times the processor writes beside them are right.

What it follows: host code never trusts /data (sandbox/data_folder.py). A medium the model reads is saved twice: in /data
for run_python, and as the host's own copy in a private folder the sandbox never sees, which is the only copy
ever decoded; so whatever the code leaves in /data (a link to a host file, a FIFO) changes nothing the model is
shown. `check` decodes each file once, and what it decoded is kept for the steps (the prompt is encoded again
each step). A video's cost is bounded before any frame is decoded, from its headers and then its packets, and
again while it decodes, since headers can lie.

The conversation's user turn is then a list of content parts in Hugging Face's format, the media first in the
order they were attached, which is also the order of their placeholders in the rendered prompt.
Left out: images inside a video's audio track (a video's sound is not heard), subtitles, and HDR colour; a bound
on sound from its headers (it is cut at MAX_SECONDS as it decodes) and on decoding time itself (the caps bound the
frames and pixels decoded, which the time follows).
"""

from __future__ import annotations

import errno
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

from agentloop.sandbox.data_folder import DATA_BYTES, DATA_ENTRIES

MEDIA = ("image", "audio", "video")
MAX_BYTES = 64 * 1024 * 1024  # one attachment
# An image, or a video frame, before it is shrunk: more is a decompression bomb
MAX_PIXELS = 50_000_000
MAX_SECONDS = 600  # sound or video decoded: the models hear 30 s and see 32 frames at most
MAX_FRAMES = 64  # of a video, taken evenly
MAX_SIDE = 768  # pixels on a video frame's longer side
# [quote:video-caps]
# What checking a video may cost. Every frame is decoded to reach the 64 kept, so the cost is the frames and
# their pixels: both are read from the headers and the packets before a frame is decoded, and counted again
# while decoding. A reader's own clip passes: a minute of 1080p at 30 fps is 1,800 frames and 3.7 G pixels,
# which decoded once in 2.2 s here (H.264). The 6,000 still 1080p frames of issue 40 (a 388 KB WebM) are
# refused by their headers.
VIDEO_FRAMES = 3_600  # a minute at 60 fps, two at 30: frames of any size cost a little each
VIDEO_PIXELS = 1920 * 1080 * 2_000  # 4.1 G: a minute of 1080p at 30 fps, with room
# [/quote:video-caps]
RATE = 16_000  # samples a second that `check` decodes sound at: Gemma 4's feature extractor's rate
# The host's own copies of one conversation's media live outside /data's quota (the code can empty /data and
# ask again), so they have one of their own: what /data may hold.
OWN_BYTES = DATA_BYTES
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
class Checked:
    """A file `check` passed: its bytes, its kind, and what decoding it gave (a medium), kept for the steps."""

    name: str
    data: bytes
    kind: str
    decoded: object = None


@dataclass(frozen=True)
class Attachment:
    """A file saved in the conversation's folder as `name`: `kind` is image, audio, video, or file (a plain file).
    `path` is the host's own copy of a medium, outside /data: the file every step decodes (None for a plain file,
    which only run_python reads)."""

    kind: str
    name: str
    path: str | None
    # A medium the model cannot read: why it stays a plain file, {en, zh}
    why_plain: dict | None = None

    def part(self) -> dict | None:
        """Its content part in the user turn: media only (a plain file is named in the text)."""
        return {"type": self.kind, "path": self.path} if self.kind in MEDIA else None


# -- saving ------------------------------------------------------------------------------------------------------


def check_all(files: list[tuple[str, bytes]]) -> list[Checked]:
    """Every file (name, bytes) checked, before any is saved: one bad file and none is."""
    return [check(data, name) for name, data in files]


def save_checked(
    checked: list[Checked], folder: Path, private: Path, readable: Collection[str]
) -> list[Attachment]:
    """Every file saved, or none: each in `folder` (/data) for run_python, and each medium the model reads
    (`readable`) also in `private`, the host's own copy. A file that cannot be written (a full /data: ENOSPC
    from its quota) is refused, and what this call wrote is removed."""
    _room_for([c for c in checked if c.kind in readable], private)
    written: list[Path] = []
    attachments = []
    for c in checked:
        try:
            attachments.append(_save(c, folder, private, readable, written))
        except OSError as e:
            for path in written:
                path.unlink(missing_ok=True)
            raise _not_saved(c.name, e) from e
    return attachments


def save(
    data: bytes, name: str, folder: Path, private: Path, readable: Collection[str]
) -> Attachment:
    """One file checked by its content, then saved as save_checked saves it."""
    return save_checked([check(data, name)], folder, private, readable)[0]


def _save(
    c: Checked, folder: Path, private: Path, readable: Collection[str], written: list[Path]
) -> Attachment:
    name = _unique(_safe_name(c.name), folder, private)
    written.append(_put(c.data, folder / name))
    if c.kind in MEDIA and c.kind in readable:
        attachment = keep(c, private, name)
        written.append(Path(attachment.path))
        return attachment
    return Attachment("file", name, None, _why_plain(c.kind, name))


def keep(c: Checked, private: Path, name: str | None = None) -> Attachment:
    """The host's own copy of a checked medium, in `private`, a folder the sandbox never sees: the file every step
    decodes, found in memory since `check` decoded it. A plain file gets no copy."""
    name = name or _unique(_safe_name(c.name), private)
    if c.kind not in MEDIA:
        return Attachment("file", name, None)
    path = _put(c.data, private / name)
    _remember(c.kind, path, c.decoded, *((RATE,) if c.kind == "audio" else ()))
    return Attachment(c.kind, name, str(path))


def _room_for(copied: list[Checked], private: Path) -> None:
    """Refuse media whose host copies would take `private` (a flat folder only the host writes) past OWN_BYTES."""
    held = sum(entry.stat().st_size for entry in os.scandir(private))
    adding = sum(len(c.data) for c in copied)
    if held + adding > OWN_BYTES:
        raise MediaError(
            f"This conversation's attachments hold {held >> 20} MiB; with these {adding >> 20} MiB they would "
            f"pass {OWN_BYTES >> 20} MiB. Start a new conversation to attach more.",
            f"這個對話的附件已有 {held >> 20} MiB；加上這些 {adding >> 20} MiB 會超過 {OWN_BYTES >> 20} MiB。"
            "請開始新的對話再附加。",
        )


def _put(data: bytes, path: Path) -> Path:
    """`data` at `path` whole or not at all: written under a temporary name, then renamed (atomic, so a reader
    of /data never sees half a file); the temporary file goes when the write fails."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _why_plain(kind: str, name: str) -> dict | None:
    """Why a medium the model cannot read is a plain file in /data, {en, zh}; None for a plain file."""
    if kind not in MEDIA:
        return None
    en, zh = KIND_NAMES[kind]
    return {
        "en": f"this model reads no {en.split()[-1]}: {name} is a plain file in /data",
        "zh": f"這個模型不讀{zh}：{name} 是 /data 裡的一般檔案",
    }


def _not_saved(name: str, e: OSError) -> MediaError:
    """A write that failed, said for the reader: a full /data by its quota, anything else by its error."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return MediaError(
            f"{name} was not saved, nor any file with it: /data is full (it holds {DATA_BYTES >> 20} MiB in "
            f"{DATA_ENTRIES:,} files and folders at most). Remove files there with run_python, or start a new "
            "conversation.",
            f"{name} 沒有存入，同一次的其他檔案也沒有：/data 已滿（最多 {DATA_BYTES >> 20} MiB、"
            f"{DATA_ENTRIES:,} 個檔案與資料夾）。請用 run_python 刪除那裡的檔案，或開始新的對話。",
        )
    return MediaError(
        f"{name} was not saved, nor any file with it: {e.strerror}.",
        f"{name} 沒有存入，同一次的其他檔案也沒有：{e.strerror}。",
    )


def check(data: bytes, name: str) -> Checked:
    """The file's kind by its content, after decoding it all the way (a cut-off file fails here, not in a
    step), with what it decoded into, kept for the steps. A name that says a medium the content is not is
    refused."""
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
    if kind not in MEDIA:
        return Checked(name, data, kind)
    try:
        return Checked(name, data, kind, DECODERS[kind](io.BytesIO(data)))
    except MediaError as e:
        raise MediaError(f"{name}: {e.en}", f"{name}：{e.zh}") from e
    except Exception as e:  # every decoder's own failure, said once for the reader
        en, zh = KIND_NAMES[kind]
        raise MediaError(
            f"{name} looks like {en} but does not decode: {e}",
            f"{name} 看起來是{zh}，但無法解碼：{e}",
        ) from e


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


def _unique(name: str, *folders: Path) -> str:
    """`name`, or name-2, name-3…: the first that is in none of `folders` (a link or a FIFO the code left counts,
    and is never written through: it is only looked at, never followed)."""
    candidate, stem, suffix, n = name, Path(name).stem, Path(name).suffix, 2
    while any(os.path.lexists(folder / candidate) for folder in folders):
        candidate, n = f"{stem}-{n}{suffix}", n + 1
    return candidate


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
    """The decoded file, from memory when `check` or an earlier step decoded it (the prompt is encoded again each
    step); decoded again only when memory let it go."""
    key = _key(kind, path, *args)
    with _decoded_lock:
        if key in _decoded:
            _decoded.move_to_end(key)
            return _decoded[key]
    value = DECODERS[kind](path, *args)
    _remember(kind, path, value, *args)
    return value


def _key(kind: str, path: str | Path, *args) -> tuple:
    """A decoded file's key: its path, size and modification time, so a file changed at the same path is new."""
    stat = os.stat(path)
    return (kind, str(path), stat.st_mtime_ns, stat.st_size, *args)


def _remember(kind: str, path: str | Path, value, *args) -> None:
    """Keep `value` as the decoded file at `path`, dropping the least recently used past DECODED_KEPT."""
    key = _key(kind, path, *args)
    with _decoded_lock:
        _decoded[key] = value
        _decoded.move_to_end(key)
        while len(_decoded) > DECODED_KEPT:
            _decoded.popitem(last=False)


def load_image(path: str | Path):
    return _once("image", path)


def load_audio(path: str | Path, rate: int = RATE) -> np.ndarray:
    return _once("audio", path, rate)


def load_video(path: str | Path) -> tuple[np.ndarray, dict]:
    return _once("video", path)


def load_parts(parts: list[dict]) -> None:
    """Every media part decoded, or found in memory: a caller that encodes under a lock calls this first, so a file
    memory let go is decoded again outside the lock, not while other tabs wait on it."""
    for part in parts:
        LOADERS[part["type"]](part["path"])


def decode_image(source):
    """RGB, upright: a photo's EXIF orientation turns it as a camera's viewer would."""
    from PIL import Image, ImageOps

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # above: DecompressionBombWarning; twice it: an error
    with Image.open(source) as image:
        if image.width * image.height > MAX_PIXELS:
            raise _too_many_pixels(image.width, image.height)
        image.load()  # a cut-off file fails here
        return ImageOps.exif_transpose(image).convert("RGB")


def decode_audio(source, rate: int = RATE) -> np.ndarray:
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
    it writes beside each is where that frame was in the video. What it costs is bounded before any frame is
    decoded (the headers, then the packets counted), and each frame is decoded once."""
    import av

    with av.open(source) as container:
        stream = container.streams.video[0]
        _check_headers(container, stream)
        total = _count_frames(container, stream)
    if hasattr(source, "seek"):
        source.seek(0)
    with av.open(source) as container:
        stream = container.streams.video[0]
        rate = float(stream.average_rate or stream.guessed_rate or 24)
        frames, decoded = _keep_evenly(container.decode(stream), total)
    duration = decoded / rate
    metadata = {
        "total_num_frames": len(frames),
        "fps": len(frames) / duration,  # of the frames kept: frame i is at i / fps seconds
        "duration": duration,
        "width": frames[0].shape[1],
        "height": frames[0].shape[0],
        "video_backend": "pyav",
    }
    return np.stack(frames), metadata


def _check_headers(container, stream) -> None:
    """Refuse, before anything is decoded, a video whose headers claim too large a frame, too long a duration,
    or more frames or pixels than a check may decode (a count the container lacks is its duration × rate)."""
    width, height = stream.codec_context.width, stream.codec_context.height
    if width * height > MAX_PIXELS:
        raise _too_many_pixels(width, height)
    if stream.duration and stream.time_base:
        seconds = float(stream.duration * stream.time_base)
    else:
        seconds = (container.duration or 0) / 1_000_000  # the container's, in AV_TIME_BASE units
    if seconds > MAX_SECONDS:
        raise MediaError(
            f"Its headers say it lasts {seconds:,.0f} s; a video may last {MAX_SECONDS} s.",
            f"它的檔頭說它長 {seconds:,.0f} 秒；影片最長 {MAX_SECONDS} 秒。",
        )
    frames = stream.frames or round(seconds * float(stream.average_rate or 0))
    _within_budget(frames, frames * width * height, CLAIMED)


def _count_frames(container, stream) -> int:
    """The video's frames, counted by their packets (one a frame) as the container is read, none decoded; refused
    as soon as the count passes the caps."""
    width, height = stream.codec_context.width, stream.codec_context.height
    n = 0
    for packet in container.demux(stream):
        if packet.size:  # the empty packet at the end only flushes the decoder
            n += 1
            _within_budget(n, n * width * height)
    if n == 0:
        raise MediaError("It holds no video frames.", "它沒有任何影格。")
    return n


def _keep_evenly(decoded, total: int) -> tuple[list[np.ndarray], int]:
    """One pass over the decoded frames: the MAX_FRAMES at evenly spaced places among `total` kept (shrunk), and
    every frame counted against the caps as it comes (the packets' count can be wrong: a frame can change size).
    Frames hidden in packets of their own (an encoder's reference frames) end the video early: its last frame
    then stands for the places not reached. Returns the frames kept and how many were decoded."""
    keep = set(np.linspace(0, total - 1, min(total, MAX_FRAMES)).round().astype(int).tolist())
    kept, n, pixels, last = [], 0, 0, None
    for frame in decoded:
        if frame.width * frame.height > MAX_PIXELS:
            raise _too_many_pixels(frame.width, frame.height)
        n, pixels = n + 1, pixels + frame.width * frame.height
        _within_budget(n, pixels)
        if n - 1 in keep:
            kept.append(_shrunk(frame))
        last = frame
    if last is None:
        raise MediaError("It holds no video frames.", "它沒有任何影格。")
    if n - 1 < max(keep):
        kept.append(_shrunk(last))
    return kept, n


CLAIMED = ("Its headers claim", "它的檔頭聲稱有")  # said of what _check_headers read
COUNTED = ("It holds at least", "它至少有")  # said of what the packets or frames counted so far


def _within_budget(frames: int, pixels: int, said: tuple[str, str] = COUNTED) -> None:
    if frames > VIDEO_FRAMES or pixels > VIDEO_PIXELS:
        raise MediaError(
            f"{said[0]} {frames:,} frames, {pixels / 1e9:.1f} G pixels in all; a video may hold "
            f"{VIDEO_FRAMES:,} frames and {VIDEO_PIXELS / 1e9:.1f} G pixels (a minute of 1080p at 30 fps "
            "fits). Shorten it, or lower its resolution or frame rate.",
            f"{said[1]} {frames:,} 個影格、共 {pixels / 1e9:.1f} G 像素；影片最多 {VIDEO_FRAMES:,} 個影格、"
            f"{VIDEO_PIXELS / 1e9:.1f} G 像素（1080p、每秒 30 格的一分鐘影片可以）。請剪短它，或降低解析度或影格率。",
        )


def _shrunk(frame) -> np.ndarray:
    scale = min(1.0, MAX_SIDE / max(frame.width, frame.height))
    width, height = max(1, round(frame.width * scale)), max(1, round(frame.height * scale))
    return frame.to_ndarray(format="rgb24", width=width, height=height)


def _too_many_pixels(width: int, height: int) -> MediaError:
    return MediaError(
        f"It claims {width}×{height} pixels, more than the {MAX_PIXELS:,} allowed (a decompression bomb?).",
        f"它聲稱有 {width}×{height} 像素，超過上限 {MAX_PIXELS:,}（可能是解壓縮炸彈）。",
    )


DECODERS = {"image": decode_image, "audio": decode_audio, "video": decode_video}
LOADERS = {"image": load_image, "audio": load_audio, "video": load_video}
