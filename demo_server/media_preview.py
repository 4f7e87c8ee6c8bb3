"""What an attached file becomes in each family's prompt (chapter 7's panel), without running a model.

For each family, the tiny checkpoint of its real architecture (whose processor settings are the real model's:
tiny_models.py) renders a user turn holding the file with its chat template, and its processor expands the
placeholder (media_processor.py). Only the tokenizer, template and processor are loaded, never weights, and no
run is started, so it answers while a run holds the model. The file is checked (decoded once, within media.py's
caps) and kept in a folder of its own, removed after. Left out: the prompt's other turns (a system prompt,
tools), which cost what they cost without media.
"""

from __future__ import annotations

import json
import threading
from functools import cache

from transformers import AutoTokenizer

from agentloop import media, model_families
from agentloop.model_backends.media_processor import MediaProcessor
from agentloop.paths import MODELS_DIR
from agentloop.sandbox import cleanup

# Each family's tiny checkpoint: its tokenizer and processor are the family's, and no weights load.
CHECKPOINTS = {f.key: f.tiny for f in model_families.FAMILIES.values()}
QUESTION = "What is this?"
_lock = threading.Lock()  # one preview at a time: the processors are not made for threads


@cache
def _family_side(family: str):
    """The checkpoint's tokenizer, its added tokens' pieces (placeholders among them) and its processor,
    loaded once."""
    folder = MODELS_DIR / CHECKPOINTS[family]
    config = json.loads((folder / "config.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    added = {t.content for t in tokenizer.added_tokens_decoder.values()}
    processor = MediaProcessor(folder, config, model_families.for_config(config), folder.name)
    return tokenizer, added, processor


def preview(name: str, data: bytes) -> dict:
    """{kind, families: {family: {model, tokens | refused}}}; each family's `tokens` is the user turn as the
    model reads it, as [piece, count] runs (a placeholder repeated 266 times is one run), with the count of
    each media kind and the whole turn's length. MediaError for a bad file."""
    checked = media.check(data, name)
    folder = cleanup.temp_folder("agentloop-media")
    try:
        attachment = media.keep(checked, folder)
        with _lock:
            families = {f: _one_family(f, attachment) for f in CHECKPOINTS}
        frames = media.summary(attachment).get("frames")
    finally:
        cleanup.remove_tree(folder)
    return {"name": name, "kind": checked.kind, "frames": frames, "families": families}


def _one_family(family: str, attachment: media.Attachment) -> dict:
    tokenizer, added, processor = _family_side(family)
    answer = {"model": processor.model_id}
    if attachment.kind not in processor.reads:
        why = processor.refused.get(attachment.kind) or {"en": "not a medium", "zh": "不是媒體"}
        return {**answer, "refused": why}
    content = media.user_content(QUESTION, [attachment])
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=False
    )
    try:
        ids, _, counts = processor.expand(
            prompt, media.parts([{"role": "user", "content": content}])
        )
    except media.MediaError as e:  # this family's processor refuses it (another may not)
        return {**answer, "refused": e.message()}
    runs: list[list] = []
    for piece in tokenizer.convert_ids_to_tokens(ids):
        if runs and runs[-1][0] == piece and piece in added:  # a placeholder, repeated
            runs[-1][1] += 1
        else:
            runs.append([piece, 1])
    return {**answer, "media_tokens": counts, "n_tokens": len(ids), "tokens": runs}
