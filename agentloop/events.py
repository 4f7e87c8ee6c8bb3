"""The one event vocabulary: every stage of a run is one of these, as a JSON object whose `type` is its name.

The backends yield `prefill`, `token` (with MTP, each round's `draft` before its tokens) and `done`; the
harnesses pass those on with the step number (`done` becomes `model_end`) and add the rest. The demo server streams them as Server-Sent Events, the panels draw
them, the recorded runs in docs/ are them saved as JSON Lines, and the tests check them against this table.
A model load's events (load_start … ready) are in the same table: the demo server streams them the same way.
A run's events, replayed in order, draw exactly what the live run drew.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # where an event's `src` path starts

# name -> the fields every event of that name carries (optional ones are listed in OPTIONAL).
FIELDS: dict[str, tuple[str, ...]] = {
    # The run: which harness, model and family, the settings, the tools the model sees.
    "run_start": ("run_id", "harness", "model", "family", "settings", "tools"),
    "step_start": ("step",),
    # The whole prompt of this step as the model reads it; `added_from` is where this step's new text starts.
    "context": (
        "step",
        "prompt",
        "n_tokens",
        "added_from",
        "media_tokens",
        "context_length",
        "roles",
    ),
    # MTP (chapter 10): one round of the drafter, sent before the tokens it yields. `guessed`: its
    # guesses [{id, piece, text}] for the tokens from `index` on; `kept`: how many the model agreed
    # with, in order (guessed[kept], if any, was turned down and the model's own pick took its place).
    "draft": ("step", "index", "guessed", "kept"),
    # pi's request to its provider, as JSON (the pi harness); `added_from`: the first message new this step.
    "request": ("step", "payload"),
    # From the backend: the prompt's forward pass, then one event per generated token. Of the
    # prompt's n_tokens, `reused` came from the cache the last generation left (chapter 8); the
    # pass computed the rest. With media, `encode_ms` is the vision encoder's time before the pass
    # (chapter 7); `ms` is the pass alone.
    "prefill": ("step", "n_tokens", "reused", "ms"),
    "token": (
        "step",
        "index",
        "id",
        "piece",
        "text",
        "special",
        "channel",
        "p",
        "logprob",
        "rank",
        "p_sampled",
        "kept",
        "top",
    ),
    # Text without token boundaries (pi's own models).
    "delta": ("step", "channel", "text"),
    # The step's end: the backend's `done`. Its timings, like prefill's ms, leave out the time the reader
    # held the run (settings.pace; pace.py). decode_ms and tok_per_s are null where that time cannot be
    # told apart (a vLLM step held mid-generation: the server generated on meanwhile); tok_per_s is null
    # for pi's own models, whose text comes without token boundaries.
    "model_end": (
        "step",
        "finish",
        "stop_piece",
        "n_tokens",
        "decode_ms",
        "tok_per_s",
        "mtp",
        "raw",
    ),
    # The parsed call; `error` when it could not be parsed or its arguments are invalid.
    "tool_call": ("step", "call_id", "name", "args"),
    "permission": ("step", "call_id"),
    "decision": ("step", "call_id", "approved", "by"),
    "tool_result": ("step", "call_id", "name", "output", "is_error", "ms"),
    "run_end": ("stop_reason", "final", "steps", "ms"),
    # The run waits for the reader's Next before `stage`, one of PAUSE_STAGES (settings.pace "step",
    # pace.py): the prefill, a token (`index`: the one its `token` event will carry), the parse, or an
    # approved call about to run (`call_id`). The next event of the run says it went on.
    "paused": ("step", "stage"),
    # Anything that went wrong, in the book's two languages.
    "error": ("message",),
    # A model load (the demo server's load stream): the family is known from config.json alone, then
    # huggingface_hub's progress (bytes written of the bytes to fetch, files done of the files to fetch),
    # then the weights go into memory, then `ready` (or an `error`).
    "load_start": ("load_id", "model"),
    "family": ("model", "family"),
    "download": ("model", "bytes_done", "bytes_total", "files_done", "files_total"),
    "loading": ("model",),
    "ready": ("model", "family", "ms"),
}

OPTIONAL: dict[str, tuple[str, ...]] = {
    # question: the reader's question this run answers (a replay draws it as the reader's turn).
    # The model's facts, as GET /api/status names them (model_backends/facts.py's model_facts), so the
    # run's Model tab shows the model that ran, replayed anywhere: backend (what ran it), device, dtype and
    # precision (why that dtype; these three None on a vLLM server, which keeps its weights), specs
    # (config.json's shape), media ({reads, refused: {kind: {en, zh}}}) and defaults (the checkpoint's
    # {temperature, top_p, top_k}). Optional: recordings made before them lack them, and pi asking one of
    # its own models has none to tell.
    "run_start": (
        "question",
        "backend",
        "device",
        "dtype",
        "precision",
        "specs",
        "media",
        "defaults",
    ),
    # role_tokens: of the prompt's n_tokens, how many each role's messages take ({"system": 120, …};
    # the opened reply the template adds at the end counts as the assistant's). Optional only for
    # recordings made before it (ch11's, recorded against vLLM); every harness sends it.
    "context": ("role_tokens",),
    # rank_beyond: the rank is None because the token is not among the top N the server reported (vLLM's
    # /v1/completions tells ranks only inside its top 5).
    "request": ("added_from",),
    "prefill": ("encode_ms",),
    "token": ("drafted", "forced", "rank_beyond"),
    "model_end": ("usage",),
    "tool_call": ("error",),
    "error": ("step", "detail"),
    "paused": ("index", "call_id"),
    # what: what a load is doing meanwhile, {en, zh} (a vLLM server starting: compose up, waiting for it).
    "loading": ("what",),
}

# Fields any event may carry: the ms since its run started (a replay waits what the run waited) and the
# line of the package that sent it, "path:line" from the repository's root (the panels link to it).
COMMON = ("t_ms", "src")

# What generate() yields, before the harness adds the step: the same from every backend.
BACKEND_EVENTS = ("prefill", "token", "draft", "done")
DONE_FIELDS = ("finish", "stop_piece", "n_tokens", "decode_ms", "tok_per_s", "mtp", "raw")
FINISH_REASONS = ("stop_token", "max_new_tokens", "user_stopped")
STOP_REASONS = ("final", "max_steps", "format_errors", "time_limit", "user_stopped", "error")
CHANNELS = ("content", "thought", "tool_call", "control")
PAUSE_STAGES = ("prefill", "token", "parse", "call")


def make(kind: str, **fields) -> dict:
    """An event of this kind, checked against FIELDS so a misspelt field fails where it is made."""
    check({"type": kind, **fields})
    return {"type": kind, **fields}


def check(event: dict) -> None:
    """Raise ValueError unless `event` has a known type, all its fields and no unknown ones."""
    kind = event.get("type")
    if kind not in FIELDS:
        raise ValueError(f"unknown event type {kind!r}")
    have = set(event) - {"type"}
    missing = set(FIELDS[kind]) - have
    extra = have - set(FIELDS[kind]) - set(OPTIONAL.get(kind, ())) - set(COMMON)
    if missing or extra:
        raise ValueError(f"{kind}: missing {sorted(missing)}, unknown {sorted(extra)}")


def error(en: str, zh: str, **extra) -> dict:
    """An `error` event whose message the panel shows in English and Traditional Chinese."""
    return make("error", message={"en": en, "zh": zh}, **extra)


def caller(skip: int = 1) -> str:
    """ "path:line" of the frame `skip` levels above the function calling this (1: that function's caller),
    the path from the repository's root."""
    frame = sys._getframe(skip + 1)
    path = Path(frame.f_code.co_filename).resolve()
    where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return f"{where}:{frame.f_lineno}"
