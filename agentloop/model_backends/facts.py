"""What a loaded model is, as the book shows it: its shape from config.json (`model_specs`), what runs it, the
media it reads and why not the others, and the sampling its checkpoint recommends (`model_facts`).

GET /api/status shows these of the loaded model (chapter 3's panel), and every harness sends them in its
run_start (events.py), so a run's Model tab, replayed later or elsewhere, shows the model that ran it rather
than whatever is loaded when it plays. They are read from the backend's own attributes: nothing is loaded or
asked here, and the same function serves both backends. A vLLM server keeps its weights, device and precision to
itself, so those are None there, and its context length is the server's (--max-model-len). Left out: the model
menu (the demo server's menu.py) and reading the checkpoint's files (text_side.py).
"""

from __future__ import annotations

from collections import Counter


def model_specs(backend) -> dict:
    """The model's shape, from config.json (the language model's part of it) and its weights."""
    config = backend.config
    text = config.get("text_config", config)
    layers = text.get("num_hidden_layers")
    layer_types = text.get("layer_types") or (["full_attention"] * layers if layers else [])
    return {
        "architecture": (config.get("architectures") or [None])[0],
        "model_type": config.get("model_type"),
        "layers": layers,
        "layer_types": layer_types,
        "layer_type_counts": dict(Counter(layer_types)),
        "hidden_size": text.get("hidden_size"),
        "heads": text.get("num_attention_heads"),
        "kv_heads": text.get("num_key_value_heads"),
        "head_dim": text.get("head_dim"),
        "vocabulary": text.get("vocab_size"),
        "context_length": backend.context_length,
        # A vLLM server keeps the weights: their count is not known here.
        "parameters": getattr(backend, "parameter_count", None),
    }


def runs_on(backend) -> dict:
    """{backend, device, dtype, precision}: what runs the model (a name of BACKENDS), and where and in what
    precision its weights are when they are in this process, with why that one (a key of precision.WHY; all
    None on a vLLM server)."""
    device = getattr(backend, "device", None)
    dtype = getattr(backend, "dtype", None)
    chosen = getattr(backend, "precision", None)
    return {
        "backend": backend.kind,
        "device": None if device is None else str(device),
        "dtype": None if dtype is None else str(dtype).removeprefix("torch."),
        "precision": None if chosen is None else chosen.why,
    }


def media_read(backend) -> dict:
    """{reads: the kinds of attachment the model reads, refused: {kind: {en, zh}}, why it does not read each
    other kind} (a vLLM server's reasons are its probe's)."""
    return {
        "reads": list(getattr(backend, "modalities", ())),
        "refused": dict(getattr(backend, "media_refused", {})),
    }


def recommended_sampling(backend) -> dict:
    """{temperature, top_p, top_k}: the checkpoint's recommended sampling (generation_config.json, through its
    family), which a run's settings start from."""
    s = backend.sampling_defaults
    return {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k}


def model_facts(backend) -> dict:
    """run_start's optional fields about the model (events.py), named and shaped as GET /api/status names them:
    what runs it, its specs, the media it reads, and its recommended sampling (`defaults`)."""
    return {
        **runs_on(backend),
        "specs": model_specs(backend),
        "media": media_read(backend),
        "defaults": recommended_sampling(backend),
    }
