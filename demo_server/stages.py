"""One stage of the loop alone, for the chapters that show it: render a conversation, tokenize text, and the
distribution of the next token under given sampling settings (sampling.py decides what top-k and top-p keep)."""

from __future__ import annotations

import torch

from agentloop.harnesses.settings import run_settings
from agentloop.model_backends.detokenize import Detokenizer
from agentloop.model_backends.sampling import candidates, sample
from agentloop.model_backends.simple_backend import fresh_positions
from agentloop.tools import select
from demo_server.errors import ApiError
from demo_server.model import CurrentModel


def chat_messages(backend, messages: list[dict]) -> list[dict]:
    """The request's messages as the chat template reads them: the thinking under the family's own key."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None}
        if "reasoning_content" in m:
            m[backend.family.thinking_key] = m.pop("reasoning_content")
        out.append(m)
    return out


def render(
    current: CurrentModel,
    messages: list[dict],
    tools: list[str] | None,
    thinking: bool,
    generation_prompt: bool,
) -> dict:
    schemas = [tool.schema() for tool in select(tools).values()] if tools else None
    with current.text() as backend:
        try:
            prompt = backend.render(
                chat_messages(backend, messages), schemas, thinking, generation_prompt
            )
        except Exception as e:
            # The template's own checks (e.g. "no user message") are the reader's to see
            raise ApiError(
                422,
                f"The chat template refused these messages: {type(e).__name__}: {e}",
                f"聊天模板拒絕了這些訊息：{type(e).__name__}: {e}",
            ) from None
        n_tokens = backend.encode(prompt).n_tokens
    return {"prompt": prompt, "n_tokens": n_tokens}


def tokenize(current: CurrentModel, text: str) -> dict:
    with current.text() as backend:
        ids = backend.encode(text).ids
        detok = Detokenizer(backend.tokenizer)
        texts = [detok.add(i) for i in ids]
    return {
        "ids": ids,
        "pieces": [backend.piece(i) for i in ids],
        "texts": texts,
        "special": [i in backend.special_ids for i in ids],
        "n_tokens": len(ids),
        "family": backend.family.key,
    }


def next_token(
    current: CurrentModel,
    prompt: str | None,
    messages: list[dict] | None,
    tools: list[str] | None,
    thinking: bool,
    temperature: float | None,
    top_p: float | None,
    top_k: int | None,
    top_n: int,
) -> dict:
    if prompt is None:
        prompt = render(current, messages, tools, thinking, True)["prompt"]
    with current.text() as backend:
        ids = backend.encode(prompt).ids
    if not ids:
        raise ApiError(
            422,
            "The prompt is empty: it has no tokens to predict from.",
            "提示是空的：沒有可以預測的 token。",
        )
    if len(ids) > backend.context_length:
        raise ApiError(
            422,
            f"The prompt has {len(ids)} tokens; this model reads at most {backend.context_length}.",
            f"提示有 {len(ids)} 個 token，超過這個模型的上限 {backend.context_length}。",
        )
    if getattr(backend, "model", None) is None:  # VLLMBackend: the logits stay in the vLLM server
        raise ApiError(
            409,
            "The next-token panel needs the model in the demo server: switch What runs the "
            "model to transformers.",
            "下一個 token 面板需要模型在示範伺服器裡執行：請把「由什麼執行模型」切換為 transformers。",
        )
    s = run_settings(
        backend.sampling_defaults, temperature=temperature, top_p=top_p, top_k=top_k
    ).sampling

    with current.forward(backend), torch.inference_mode():
        # One forward pass over the prompt, as generate()'s prefill does (from fresh positions), keeping only
        # the last position's logits.
        fresh_positions(backend.model)
        out = backend.model(
            input_ids=torch.tensor([ids], device=backend.device), use_cache=False, logits_to_keep=1
        )
        logits = out.logits[0, -1].float().cpu()

    chosen, details = sample(logits, s, backend.piece)  # one draw, as generate() would make it
    # The tokens the settings keep, with their probabilities among the kept: what sample() drew from.
    kept_ids, kept_probs = candidates(logits, s)
    p_kept = dict(zip(kept_ids.tolist(), kept_probs.tolist()))
    probs = torch.softmax(logits, -1)
    # The most likely first; equal p: the lower id first, as argmax.
    order = torch.sort(probs, descending=True, stable=True).indices[:top_n].tolist()
    top = [
        {
            "rank": r + 1,
            "id": i,
            "piece": backend.piece(i),
            "text": backend.tokenizer.decode([i]),
            "p": float(probs[i]),
            "logprob": float(torch.log(probs[i])) if probs[i] > 0 else None,
            "kept": i in p_kept,
            "p_kept": p_kept.get(i, 0.0),
        }
        for r, i in enumerate(order)
    ]
    return {
        "prompt": prompt,
        "n_tokens": len(ids),
        "settings": {"temperature": s.temperature, "top_p": s.top_p, "top_k": s.top_k},
        "kept": details["kept"],
        "vocabulary": len(probs),
        "top": top,
        "sampled": {
            "id": chosen,
            "piece": backend.piece(chosen),
            "text": backend.tokenizer.decode([chosen]),
            "p": details["p"],
            "rank": details["rank"],
            "p_sampled": details["p_sampled"],
        },
    }
