"""`agentloop run`: SimpleHarness in the terminal, each event printed as it comes, permission asked
with y/n.

What the model and its code wrote is printed with its control characters escaped (ESC shows as
\\u001b, as --json writes it): raw, an escape sequence in a tool's output would reach the reader's
terminal, which may then set its clipboard (OSC 52), change its title or clear its screen. The
conversation's folder is a new temporary one, with the kernel's quota, unless --folder names one;
it is removed at the end unless --keep (`conversation_folder`)."""

from __future__ import annotations

import json
import os
import queue
import re
import sys
import tempfile
import threading
from pathlib import Path

from agentloop import media, paths
from agentloop.harnesses import harness_class
from agentloop.harnesses.base import run_reporting_errors
from agentloop.harnesses.settings import RunSettings, run_settings
from agentloop.model_families import Sampling
from agentloop.sandbox import cleanup, data_folder

DEFAULT_VLLM_URL = "http://127.0.0.1:8100"  # where `agentloop vllm serve` listens


def settings_from(args, recommended: Sampling) -> RunSettings:
    """The run's settings: the flags given, and (run_settings) the checkpoint's recommended sampling for the
    rest. An unknown tool name fails here, before the model loads."""
    tools = tuple(t.strip() for t in args.tools.split(",")) if args.tools else None
    return run_settings(
        recommended,
        max_steps=args.max_steps,
        max_new_tokens=args.max_tokens,
        thinking=args.thinking,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        use_tools=not args.no_tools,
        tools=tools,
        auto_approve=args.yes,
        mtp=args.mtp,
        seed=args.seed,
        harness=args.harness,
        pi_model=args.pi_model,
        pi_tools=args.pi_tools,
    )


def load(name: str | None, backend: str = "transformers", vllm_url: str | None = None):
    """The backend for a model's name (paths.model_ref), or (`backend` "vllm") the vLLM server at
    `vllm_url` ($VLLM_URL, else where `agentloop vllm serve` listens) serving it, or its first model
    when no name is given. A model that cannot be found or fetched is a message in English and
    Chinese on stderr, and None."""
    from agentloop.model_backends import model_folder, open_backend

    try:
        if backend == "vllm":
            url = vllm_url or os.environ.get("VLLM_URL") or DEFAULT_VLLM_URL
            return open_backend("vllm", name, url=url)
        ref, _ = paths.model_ref(name, folders=True)
        return open_backend(backend, ref)
    except paths.ModelNotFound as e:
        message = {"en": e.en, "zh": e.zh}
    except Exception as e:  # huggingface_hub's, the family check's and the server's errors
        message = (
            {"en": e.en, "zh": e.zh}
            if hasattr(e, "zh")
            else model_folder.explain(name or paths.DEFAULT_MODEL, e)
        )
    sys.stderr.write(f"{message['en']}\n{message['zh']}\n")
    return None


def run(args) -> int:
    settings = settings_from(args, Sampling())  # the flags are checked before the model loads
    try:  # and the attachments: a bad file is said before anything loads or is saved
        checked = media.check_all([(Path(p).name, Path(p).read_bytes()) for p in args.attach])
    except (OSError, media.MediaError) as e:
        print(f"Cannot attach: {getattr(e, 'en', e)}", file=sys.stderr)
        return 2
    if args.pi_logins:  # read by pi/command.py when it starts pi
        os.environ["AGENTLOOP_PI_LOGINS"] = "1"
    if args.harness == "pi" and args.pi_model:  # pi's own model: nothing loads here
        llm = None
    else:
        llm = load(args.model, args.backend, args.vllm_url)
        if llm is None:
            return 2
    settings = settings_from(args, llm.sampling_defaults if llm else Sampling())
    folder = conversation_folder(args)
    # The host's own copies of the media, outside /data: what the prompt is decoded from.
    own = cleanup.temp_folder("agentloop-media")
    try:
        attachments = media.save_checked(checked, folder, own, getattr(llm, "modalities", ()))
        for a in attachments:
            if a.why_plain:
                print(f"{a.name}: {a.why_plain['en']}", file=sys.stderr)
        return loop(llm, args, settings, folder, attachments)
    except media.MediaError as e:  # the folder is full
        print(f"Cannot attach: {e.en}", file=sys.stderr)
        return 2
    finally:
        cleanup.remove_tree(own)
        if args.folder is None and args.keep:  # a folder the reader named is never removed
            print(f"The conversation's folder is kept: {folder}", file=sys.stderr)
        elif args.folder is None:
            cleanup.remove_tree(folder)


def conversation_folder(args) -> Path:
    """The folder run_python sees as /data: the one the reader named; with --keep, a plain folder on
    disk that outlives this process (not named for it, so no sweep removes it); otherwise a new one
    with the kernel's quota (data_folder.create), removed at the end. The first two have the quota
    checked after each run."""
    if args.folder:
        return Path(args.folder)
    if args.keep:
        return Path(tempfile.mkdtemp(prefix="agentloop-kept-"))
    return data_folder.create()


def loop(llm, args, settings: RunSettings, folder: Path, attachments=()) -> int:
    """Run the harness in a worker thread and show its events until run_end; 0 if it ended well."""
    inbox: queue.Queue = queue.Queue()
    make, question = harness_class(args.harness), args.question
    if not make.takes_attachments:  # told of the files in /data by their names instead
        question += "".join(f"\nAttached: /data/{a.name}" for a in attachments)
        attachments = ()
    harness = make(llm, [], question, settings, inbox.put, folder, attachments)
    worker = threading.Thread(target=run_reporting_errors, args=(harness,), daemon=True)
    worker.start()
    show = print_json if args.json else Printer().show
    while True:
        event = inbox.get()
        show(event)
        if event["type"] == "permission" and not settings.auto_approve:
            harness.decide(event["call_id"], ask_yes_no(f"Run call {event['call_id']}? [y/N] "))
        if event["type"] == "run_end":
            worker.join()
            return 0 if event["stop_reason"] == "final" else 1


def ask_yes_no(prompt: str) -> bool:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), the
# bidirectional overrides that make text display in another order than it reads ("Trojan Source").
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with each control character shown as its JSON escape, \\u001b for ESC."""
    return CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(event: dict) -> None:
    print(json.dumps(event, ensure_ascii=False), flush=True)


class Printer:
    """Events as lines a person reads; tokens stream inline as text."""

    def __init__(self):
        self.streaming = False

    def line(self, text: str) -> None:
        if self.streaming:
            sys.stdout.write("\n")
            self.streaming = False
        print(visible(text), flush=True)

    def show(self, e: dict) -> None:
        kind = e["type"]
        if kind == "token":
            sys.stdout.write(visible(e["text"]))
            sys.stdout.flush()
            self.streaming = True
        elif kind == "run_start":
            self.line(f"== {e['model']} ({e['family']}), tools: {', '.join(e['tools']) or 'none'}")
        elif kind == "step_start":
            self.line(f"-- step {e['step']}")
        elif kind == "context":
            self.line(
                f"   context: {e['n_tokens']} tokens of {e['context_length']}, roles {e['roles']}"
            )
        elif kind == "prefill":
            reused = f" ({e['reused']} reused from the last step)" if e.get("reused") else ""
            self.line(f"   prefill: {e['n_tokens']} tokens{reused} in {e['ms']} ms")
        elif kind == "model_end":
            mtp = e.get("mtp")
            drafted = (
                f", {mtp['forwards']} forward passes: {mtp['accepted']} of {mtp['drafted']} MTP guesses kept"
                if mtp
                else ""
            )
            self.line(
                f"   [{e['finish']}{' at ' + e['stop_piece'] if e['stop_piece'] else ''}: {e['n_tokens']} tokens, "
                f"{e['tok_per_s']} tok/s{drafted}]"
            )
        elif kind == "delta":
            sys.stdout.write(e["text"])
            sys.stdout.flush()
            self.streaming = True
        elif kind == "request":
            self.line(
                f"   pi's request: {len(e['payload'].get('messages', []))} messages, "
                f"new from message {e.get('added_from', 0)}"
            )
        elif kind == "tool_call":
            if e.get("error") and e["name"] is None:
                self.line(f"   format error: {e['error']}")
            else:
                self.line(
                    f"   tool call {e['call_id']}: {e['name']}({json.dumps(e['args'], ensure_ascii=False)})"
                    + (f" — invalid: {e['error']}" if e.get("error") else "")
                )
        elif kind == "decision":
            self.line(f"   {'approved' if e['approved'] else 'denied'} ({e['by']})")
        elif kind == "tool_result":
            self.line(
                f"   result{' (error)' if e['is_error'] else ''} in {e['ms']} ms:\n"
                + indent(e["output"])
            )
        elif kind == "run_end":
            self.line(f"== {e['stop_reason']} after {e['steps']} steps, {e['ms']} ms\n{e['final']}")
        elif kind == "error":
            self.line(f"!! {e['message']['en']}")


def indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines()) or "      (no output)"
