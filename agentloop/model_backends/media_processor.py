"""MediaProcessor: a checkpoint's processor, which turns each media placeholder into the tokens its file takes.

The chat template writes one placeholder per attachment; the processor (processor_config.json, or
preprocessor_config.json and video_preprocessor_config.json) knows how many tokens each image, sound or video
takes and writes them, with the inputs of the encoders whose output later goes in their place. It needs no
weights, so the demo server also uses it to show what a file becomes in each family (chapter 7).
Left out: batching several prompts (one conversation is one sequence).
"""

from __future__ import annotations

from pathlib import Path

from transformers import AutoProcessor

from agentloop import media
from agentloop.model_families import Family


class MediaProcessor:
    def __init__(self, folder: str | Path, config: dict, family: Family, model_id: str):
        self.family, self.model_id = family, model_id
        self.processor, self.reads, self.refused = load_processor(Path(folder), config)
        # The placeholder each kind expands into (Gemma 4's <|image|>, Qwen3.5's <|image_pad|>, …).
        self.token_ids = {kind: config.get(f"{kind}_token_id") for kind in media.MEDIA}

    def expand(self, prompt: str, parts: list[dict]) -> tuple[list[int], dict, dict]:
        """The prompt's ids with every placeholder expanded, the encoders' inputs (torch tensors) and the
        number of tokens of each kind. A kind this model does not read is refused in both languages."""
        if unread := {p["type"] for p in parts} - set(self.reads):
            kinds = ", ".join(sorted(unread))
            reads = ", ".join(self.reads)
            raise media.MediaError(
                f"{self.model_id} reads no {kinds}: only {reads or 'text'}.",
                f"{self.model_id} 不讀 {kinds}，只讀 {reads or '文字'}。",
            )
        try:  # the processor's own limits (Qwen3.5: an aspect ratio under 200), said for the reader
            out = self.processor(
                text=prompt,
                return_tensors="pt",
                **self.inputs(parts),
                **self.family.processor_kwargs,
            )
        except ValueError as e:
            raise media.MediaError(
                f"{self.model_id}'s processor refused the media: {e}",
                f"{self.model_id} 的處理器拒絕了這個媒體：{e}",
            ) from e
        ids = out.pop("input_ids")[0].tolist()
        # One sequence, no padding: every position counts, as with text.
        out.pop("attention_mask", None)
        counts = {
            kind: ids.count(token) for kind, token in self.token_ids.items() if token is not None
        }
        return ids, out, {kind: n for kind, n in counts.items() if n}

    def inputs(self, parts: list[dict]) -> dict:
        """The processor's arguments: each file decoded once (media.py), each kind in placeholder order."""
        paths = {kind: [p["path"] for p in parts if p["type"] == kind] for kind in media.MEDIA}
        inputs: dict = {}
        if paths["image"]:
            inputs["images"] = [media.load_image(path) for path in paths["image"]]
        if paths["audio"]:
            rate = self.processor.feature_extractor.sampling_rate
            inputs["audio"] = [media.load_audio(path, rate) for path in paths["audio"]]
        if paths["video"]:
            videos = [media.load_video(path) for path in paths["video"]]
            inputs["videos"] = [frames for frames, _ in videos]
            kwargs = {"video_metadata": [metadata for _, metadata in videos]}
            # A processor that takes a set number of frames (Gemma 4: 32) refuses a shorter video: it gets all.
            wanted = getattr(self.processor.video_processor, "num_frames", None)
            fewest = min(len(frames) for frames in inputs["videos"])
            if wanted and fewest < wanted:
                kwargs["num_frames"] = fewest
            inputs["videos_kwargs"] = kwargs
        return inputs


def load_processor(folder: Path, config: dict) -> tuple[object | None, tuple[str, ...], dict]:
    """The checkpoint's processor, the media kinds it and the model read, and why each other kind is not read
    ({kind: {en, zh}}). A checkpoint without processor files, or a machine without torchvision, reads text."""
    has_encoder = encoder_kinds(config)
    if not has_encoder:
        why = {"en": "this model has no encoder for media", "zh": "這個模型沒有媒體編碼器"}
        return None, (), {kind: why for kind in media.MEDIA}
    try:
        processor = AutoProcessor.from_pretrained(folder)
    except (OSError, ValueError, ImportError) as e:
        why = {"en": f"its processor does not load: {e}", "zh": f"它的處理器無法載入：{e}"}
        return None, (), {kind: why for kind in media.MEDIA}
    parts = {"image": "image_processor", "video": "video_processor", "audio": "feature_extractor"}
    reads = tuple(
        kind
        for kind in media.MEDIA
        if kind in has_encoder and getattr(processor, parts[kind], None) is not None
    )
    refused = {
        kind: {
            "en": f"this model has no {kind} encoder",
            "zh": f"這個模型沒有{media.KIND_NAMES[kind][1]}編碼器",
        }
        for kind in media.MEDIA
        if kind not in reads
    }
    if "audio" in reads and not audio_encoder_fits(config, processor):
        reads = tuple(kind for kind in reads if kind != "audio")
        refused["audio"] = {
            "en": "its audio encoder's first layer is sized for another number of mel bands",
            "zh": "它的音訊編碼器第一層的大小對不上梅爾頻帶的數目",
        }
    return processor, reads, refused


def encoder_kinds(config: dict) -> tuple[str, ...]:
    """The media kinds the checkpoint has an encoder for, by its config: images and video share the
    vision encoder."""
    encoders = {"image": "vision_config", "audio": "audio_config", "video": "vision_config"}
    return tuple(kind for kind in media.MEDIA if encoders[kind] in config)


def audio_encoder_fits(config: dict, processor) -> bool:
    """transformers 5.22 sizes Gemma 4's audio input projection from subsampling_conv_channels[0] as if it
    were the number of mel bands (both are 128 in the real checkpoint); where they differ, it cannot run."""
    channels = config["audio_config"].get("subsampling_conv_channels", [128])
    return channels[0] == processor.feature_extractor.feature_size
