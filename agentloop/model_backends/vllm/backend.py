"""VLLMBackend: the model in a vLLM server (here, in Docker, on a GPU machine or a cluster), the
same events out.

The text side stays on this machine: VLLMBackend is a TextSide (text_side.py) as SimpleBackend is,
reading the checkpoint's files but its weights (tokenizer, chat template, configs), so a prompt is the
same token ids on both backends, and a token the same event. Only the ids cross to the server, and tokens come
back one streamed chunk at a time, each with its log-probability and the top 5 of the model's own
distribution (vLLM's default `--logprobs-mode raw_logprobs`: before temperature, top-k and top-p, as
sampling.py reports it).

Two endpoints of vLLM's server: `/inference/v1/generate` (token ids in and out, each token's
exact rank; vLLM 0.30+ serves it only with `--enable-scale-out`) when the probe finds it, else
`/v1/completions` with token ids as the prompt, where a token's rank is known only when it is in the
top 5. With media (chapter 7), the files go beside the ids as `content_parts` of
/inference/v1/generate, and the server expands each placeholder and runs the encoders in its
prefill; encode() asks it how first. The HTTP is client.py's, which model and whose files menu.py's,
and what the server can do probe.py's. Left out: what only a backend that holds the logits can report
(which tokens the settings kept, p after the settings, the book's forced answers)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from agentloop import media
from agentloop.model_backends import Encoded
from agentloop.model_backends.detokenize import Detokenizer
from agentloop.model_backends.model_folder import checkpoint_files
from agentloop.model_backends.sampling import TOP_N
from agentloop.model_backends.text_side import TextSide
from agentloop.model_backends.vllm.client import (
    COMPLETIONS,
    GENERATE,
    ServerError,
    post_status,
    refused,
    stream,
)
from agentloop.model_backends.vllm.content_parts import audio_rate, content_part
from agentloop.model_backends.vllm.media_probes import sample_part
from agentloop.model_backends.vllm.menu import files_source, served_model
from agentloop.model_backends.vllm.probe import media_probe, probe
from agentloop.model_families import Sampling

# Every sampling setting the reader does not set, at the value that leaves the distribution alone:
# any field left out takes the checkpoint's generation_config.json on the server
# (`--generation-config auto`).
NEUTRAL = {
    "min_p": 0.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
    "ignore_eos": False,
    "skip_special_tokens": False,
    "n": 1,
}


# A TextSide, as SimpleBackend is: the same files read by the same functions give the same prompt
# ids, and the same tokens the same events.
class VLLMBackend(TextSide):
    kind = "vllm"
    # The server goes on generating while a run is held at its pace (pace.py): holding between two
    # tokens of its stream paces only what the run shows, and its decode time is not known here.
    runs_ahead = True

    @classmethod
    def open(cls, model: str | None, *, device: str | None = None, url: str | None = None):
        """The model `model` (None: the first) of the server at `url` (open_backend; the server's
        own device is its business)."""
        return cls(url, model)

    def __init__(
        self,
        url: str,
        model_id: str | None = None,
        endpoint: str | None = None,
        timeout_s: float = 60.0,
    ):
        """`endpoint`: GENERATE or COMPLETIONS to choose; None takes GENERATE when the probe finds
        it."""
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        served = served_model(self.url, model_id)
        # The text side from the checkpoint's files but its weights, under the name the server serves
        # it by, which every request sends.
        super().__init__(Path(checkpoint_files(files_source(model_id, served))), served["id"])
        # The server's limit (--max-model-len), not the checkpoint's.
        self.context_length = int(served["max_model_len"])
        self.probe = probe(self.url, self.model_id)
        self.endpoint = endpoint or (GENERATE if self.probe["generate"] else COMPLETIONS)
        self.media_token_ids = {kind: self.config.get(f"{kind}_token_id") for kind in media.MEDIA}
        self.audio_rate = audio_rate(self.folder)
        self.modalities, self.media_refused = media_probe(
            self.url, self.config, self.endpoint == GENERATE, self.probe["why"], self._send_sample
        )
        self.probe["media"] = list(self.modalities)

    # -- text in -----------------------------------------------------------------------------------

    def encode(self, prompt: str, parts: list[dict] | None = None) -> Encoded:
        """The prompt's token ids, which are what the server reads. With media (`parts`, in the order
        of their placeholders), the server expands each placeholder into the tokens its file takes, so
        it is asked how first, with a one-token request: the text and the count are of the prompt as
        the server reads it, and the ids stay the ones the chat template wrote, which generate()
        sends again with the files."""
        ids = self.tokenizer(prompt, add_special_tokens=False).input_ids
        if not parts:
            return Encoded(prompt, ids, len(ids))
        if unread := {p["type"] for p in parts} - set(self.modalities):
            kinds, reads = ", ".join(sorted(unread)), ", ".join(self.modalities)
            raise media.MediaError(
                f"The vLLM server takes no {kinds} here, only {reads or 'text'}.",
                f"這個 vLLM 伺服器不收 {kinds}，只收 {reads or '文字'}。",
            )
        files = [content_part(p, self.audio_rate) for p in parts]
        expanded = self._expand(ids, files)
        counts = {
            kind: expanded.count(token)
            for kind, token in self.media_token_ids.items()
            if token is not None and token in expanded
        }
        return Encoded(
            self.tokenizer.decode(expanded, skip_special_tokens=False),
            ids,
            len(expanded),
            {"content_parts": files, "prompt_token_ids": expanded},
            counts,
        )

    def _expand(self, ids: list[int], files: list[dict]) -> list[int]:
        """The prompt as the server expands it with these files: a request for one token that asks
        for the prompt's ids back."""
        body = {
            "model": self.model_id,
            "token_ids": ids,
            "sampling_params": {"max_tokens": 1, "temperature": 0.0},
            "content_parts": files,
            "return_token_ids": True,
        }
        status, answer = post_status(self.url, GENERATE, body, self.timeout_s)
        if status != 200:
            raise refused(self.url, GENERATE, status, answer)
        return json.loads(answer)["prompt_token_ids"]

    def _send_sample(self, kind: str) -> None:
        """The media probe's one request for `kind`: a user turn of a tiny sample and "Hi", rendered
        by the chat template and sent for one token (ServerError: the server refused it)."""
        turn = [{"role": "user", "content": [{"type": kind}, {"type": "text", "text": "Hi"}]}]
        ids = self.tokenizer(self.render(turn, None, False), add_special_tokens=False).input_ids
        self._expand(ids, [sample_part(kind, self.audio_rate)])

    # -- tokens out --------------------------------------------------------------------------------

    def generate(
        self, prompt: Encoded, sampling: Sampling, should_stop: Callable[[], bool]
    ) -> Iterator[dict]:
        """Yield a prefill event when the first token is back, one event per token, then done."""
        room = self.context_length - len(prompt.ids)
        if room <= 0:
            raise ServerError(
                f"The prompt has {len(prompt.ids)} tokens; "
                f"the vLLM server reads at most {self.context_length}.",
                f"提示有 {len(prompt.ids)} 個 token，"
                f"超過 vLLM 伺服器的上限 {self.context_length}。",
            )
        # vLLM would cut max_tokens to what fits without a word: it is cut here, where it is seen.
        max_tokens = min(sampling.max_new_tokens, room)
        endpoint = self.endpoint
        request = self._request(endpoint, prompt.ids, sampling, max_tokens)
        if (
            prompt.media
        ):  # the files beside the ids; the first chunk says how the server expanded them
            request |= {"content_parts": prompt.media["content_parts"], "return_token_ids": True}
        channel = "thought" if prompt.text.endswith(self.family.thought_prefix) else "content"
        generated: list[int] = []
        text = Detokenizer(self.tokenizer)
        finish, mtp, prefilled = None, None, False
        start = time.perf_counter()
        with stream(self.url, endpoint, request, self.timeout_s) as chunks:
            for chunk in chunks:
                if prompt.media and "prompt_token_ids" in chunk:
                    self._same_expansion(prompt, chunk["prompt_token_ids"])
                if chunk.get("usage") is not None:
                    mtp = spec_decode_counts(chunk) or mtp
                for token_id, details in self._tokens(endpoint, chunk):
                    # The first token is back: the prefill is done, and shown before should_stop is
                    # asked (a run held before that token shows its prefill first, as on transformers).
                    if not prefilled:
                        yield prefill_event(prompt, start)
                        decode_start, prefilled = time.perf_counter(), True
                    if should_stop():
                        finish = "user_stopped"
                        # leaving the `with` closes the connection, and vLLM aborts the request
                        break
                    generated.append(token_id)
                    event, channel = self.token_event(
                        token_id, len(generated) - 1, text, channel, details
                    )
                    yield event
                if finish == "user_stopped":
                    break
                finish = finish_of(chunk) or finish
        if finish not in ("stop_token", "max_new_tokens", "user_stopped"):
            raise ServerError(
                f"The vLLM server at {self.url} ended the answer after {len(generated)} tokens "
                f"without a finish reason agentloop knows ({finish!r}): it may have stopped or "
                f"restarted.",
                f"{self.url} 的 vLLM 伺服器在 {len(generated)} 個 token 後結束回答，"
                f"沒有 agentloop 認得的結束原因"
                f"（{finish!r}）：伺服器可能已停止或重新啟動。",
            )
        if not prefilled:  # no token came back: the prefill still ran on the server
            yield prefill_event(prompt, start)
            decode_start = time.perf_counter()
        yield self.done_event(generated, finish, time.perf_counter() - decode_start, mtp)

    def _same_expansion(self, prompt: Encoded, expanded: list[int]) -> None:
        """The prompt the server reads now must be the one encode() showed: else the context the
        reader saw is not what the model read."""
        if expanded is not None and expanded != prompt.media["prompt_token_ids"]:
            raise ServerError(
                f"The vLLM server expanded the media into {len(expanded)} tokens, not the "
                f"{prompt.n_tokens} it gave when asked before: the context shown is not what it read.",
                f"vLLM 伺服器把媒體展開成 {len(expanded)} 個 token，而不是先前回答的 "
                f"{prompt.n_tokens} 個：顯示的上下文不是它讀到的。",
            )

    def _request(self, endpoint: str, ids: list[int], s: Sampling, max_tokens: int) -> dict:
        """The request body: the reader's settings, every other setting neutral, our stop tokens,
        the top 5."""
        temperature, top_k = max(s.temperature, 0.0), s.top_k
        if self.probe["mask"]:  # a server that sends masks refuses greedy and "no limit" as such
            text = self.config.get("text_config") or self.config
            temperature, top_k = for_mask_server(temperature, top_k, int(text["vocab_size"]))
        settings = {
            "temperature": temperature,
            "top_p": s.top_p,
            "top_k": top_k,
            "max_tokens": max_tokens,
            "stop_token_ids": sorted(self.eos_ids),
            "logprobs": TOP_N,
            **NEUTRAL,
            **({"seed": s.seed} if s.seed is not None else {}),  # vLLM's own per-request seed
        }
        if endpoint == GENERATE:
            return {
                "model": self.model_id,
                "token_ids": ids,
                "sampling_params": settings,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        return {
            "model": self.model_id,
            "prompt": ids,
            **settings,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_tokens_as_token_ids": True,
            "return_token_ids": True,
        }

    def _tokens(self, endpoint: str, chunk: dict) -> Iterator[tuple[int, dict]]:
        """The tokens of one streamed chunk, each with what the server told about it."""
        for choice in chunk.get("choices") or []:
            if endpoint == GENERATE:
                entries = (choice.get("logprobs") or {}).get("content") or []
                masks = choice.get("sampling_mask") or []
                for n, (token_id, entry) in enumerate(zip(choice.get("token_ids") or [], entries)):
                    top = [(t["token_id"], t["logprob"]) for t in entry.get("top_logprobs") or []]
                    mask = masks[n] if n < len(masks) else None
                    yield token_id, self._details(entry["logprob"], entry["rank"], top, mask)
            else:
                logprobs = choice.get("logprobs") or {}
                for token_id, logprob, top in zip(
                    choice.get("token_ids") or [],
                    logprobs.get("token_logprobs") or [],
                    logprobs.get("top_logprobs") or [],
                ):
                    # Up to 6 entries: the top 5, and the sampled token when it is not among them.
                    ranked = sorted(
                        ((int(k.split(":", 1)[1]), v) for k, v in top.items()),
                        key=lambda c: (-c[1], c[0]),
                    )[:TOP_N]
                    ids = [i for i, _ in ranked]
                    rank = ids.index(token_id) + 1 if token_id in ids else None
                    yield token_id, self._details(logprob, rank, ranked)

    def _details(
        self,
        logprob: float,
        rank: int | None,
        top: list[tuple[int, float]],
        mask: list[int] | None = None,
    ) -> dict:
        """A token's fields as sampling.py reports them, from what the server says. Which tokens the
        settings kept is known only from a server that sends its sampling mask (`mask`: the ids that
        survived top-k and top-p here); otherwise it and p after the settings stay None (unknown). A
        rank of None: below the top 5 the server sent."""
        top = sorted(top, key=lambda c: (-c[1], c[0]))[:TOP_N]
        if mask is not None:
            return self._masked_details(logprob, rank, top, set(mask))
        details = {
            "p": math.exp(logprob),
            "logprob": logprob,
            "rank": rank,
            "p_sampled": None,
            "kept": None,
            "top": [
                {"id": i, "piece": self.piece(i), "p": math.exp(lp), "kept": None} for i, lp in top
            ],
        }
        if rank is None:
            details["rank_beyond"] = TOP_N
        return details

    def _masked_details(
        self, logprob: float, rank: int | None, top: list[tuple[int, float]], kept: set[int]
    ) -> dict:
        """From a server that sends its sampling mask: it was started with --logprobs-mode
        processed_logprobs (vLLM requires it), so its probabilities are after the settings, over the
        tokens they kept: they are p_sampled and p_kept, and the model's own p is not known (None)."""
        details = {
            "p": None,
            "logprob": None,
            "rank": rank,
            "p_sampled": math.exp(logprob),
            "kept": len(kept),
            "top": [
                {
                    "id": i,
                    "piece": self.piece(i),
                    "p": None,
                    "p_kept": math.exp(lp),
                    "kept": i in kept,
                }
                for i, lp in top
            ],
        }
        if rank is None:
            details["rank_beyond"] = TOP_N
        return details

    def force(self, text: str) -> None:
        """Forced continuations need the model's scores of tokens it did not pick: only a backend that
        holds the logits has them."""
        raise ServerError(
            "Forced continuations need the model in this process: switch to transformers.",
            "強制續寫需要模型在這個程序中執行：請切換到 transformers。",
        )

    def clear_forced(self) -> None:
        """Nothing is ever forced here."""

    def forget(self) -> None:
        """Nothing is kept here between runs: the server's own prefix cache decides what it reuses."""

    def unload(self) -> None:
        """Nothing to hand back here: the weights live in the server, which whoever started it
        stops."""


# -- the server's answers -------------------------------------------------------------------------


def for_mask_server(temperature: float, top_k: int, vocab_size: int) -> tuple[float, int]:
    """(temperature, top_k) as a server started with --return-sampling-mask takes them: vLLM 0.32
    refuses temperature 0 and a top_k of 0 or -1 there (v1/engine/input_processor.py: the mask it
    sends back must be bounded). Greedy becomes top_k 1 at temperature 1: only the most likely
    token is kept, so it is the one drawn. No limit becomes top_k the vocabulary's size: every token
    is kept."""
    if temperature <= 0.0:
        return 1.0, 1
    return temperature, top_k if top_k > 0 else vocab_size


def prefill_event(prompt: Encoded, start: float) -> dict:
    """The prefill, seen from here: the time from sending the request to the first token back,
    the server's encoders included (it does not report them apart).

    `reused` is None (unknown): the server keeps its own prefix cache and does not say, at the first
    token, how much of the prompt it took from it."""
    ms = round((time.perf_counter() - start) * 1000, 1)
    return {"type": "prefill", "n_tokens": prompt.n_tokens, "reused": None, "ms": ms}


def finish_of(chunk: dict) -> str | None:
    """vLLM's finish reason in the book's words: stop (a stop token) -> stop_token, length ->
    max_new_tokens; anything else ("abort", a reason of a later vLLM) is kept as it is, and
    generate() reports it as an error."""
    for choice in chunk.get("choices") or []:
        reason = choice.get("finish_reason")
        if reason is not None:
            return {"stop": "stop_token", "length": "max_new_tokens"}.get(reason, reason)
    return None


def spec_decode_counts(chunk: dict) -> dict | None:
    """Speculative decoding's counts from the last chunk (with `--per-request-spec-decode-metrics`),
    as SimpleBackend's `mtp`; None when the server reports none."""
    spec = (chunk.get("metrics") or {}).get("speculative_decoding") or (
        (chunk.get("usage") or {}).get("metrics") or {}
    ).get("speculative_decoding")
    if not spec:
        return None
    return {
        "drafted": spec.get("num_draft_tokens"),
        "accepted": spec.get("num_accepted_draft_tokens"),
        "forwards": spec.get("num_drafts"),
    }
