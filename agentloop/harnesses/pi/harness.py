"""PiHarness: the same question through pi, a real coding agent, in RPC mode (chapter 16).

pi runs its own loop: it sends the conversation to a model, runs the tools the model calls, and goes
round again. PiHarness starts it as a child process for each question and turns every record pi
writes into the book's events, so the server, the CLI and the panels take it exactly as they take
SimpleHarness (the same constructor, the same events). The model pi asks is this page's model,
served to pi by ModelEndpoint on 127.0.0.1 (every token then shows as in the built-in harness), or
one of pi's own providers (`delta` events: text without token boundaries). pi starts with a private
agent dir (models.json, settings.json with pi's retries off), with none of the user's extensions,
skills, prompt templates, themes or context files, and one extension of ours (extension.ts): it
reports each provider request, asks the reader before every tool call, and runs every tool in the
sandbox, pi's own (settings.pi_tools "pi", sandboxed.py) or the book's ("book"). pi's start is
command.py's, its process and protocol rpc.py's, the menu of pi's own models menu.py's.
pi never starts in the conversation's folder (command.py says why). It keeps its session there
(session.py), and a follow-up question starts pi again on it, so the model reads the whole
conversation. Attached files are saved in /data and named in the question; an image the model reads
goes with pi's prompt. Left out: compaction (off), images in a tool's result.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from agentloop import events, media
from agentloop.harnesses.base import Reader
from agentloop.harnesses.model_endpoint import ModelEndpoint
from agentloop.harnesses.pi import session
from agentloop.harnesses.pi.command import (
    PI_CWD,
    PROVIDER,
    pi_command,
    pi_env,
    pi_model_id,
    write_agent_dir,
)
from agentloop.harnesses.pi.rpc import PiFailed, PiProcess
from agentloop.harnesses.settings import RunSettings, pi_tool_names, tools_for
from agentloop.model_backends import Backend
from agentloop.model_backends.facts import model_facts
from agentloop.sandbox import data_folder

REQUEST_MARK = "agentloop:request "  # the extension's notify that carries a provider request
PERMISSION_TITLE = "agentloop:permission"
SETTLE_S = 10.0  # how long pi may take to settle after an abort before it counts as hung
# pi's record names -> the book's channels for `delta` (pi's own models only).
DELTA_CHANNELS = {
    "thinking_delta": "thought",
    "text_delta": "content",
    "toolcall_delta": "tool_call",
}


class PiHarness:
    """pi's loop, with the same Reader as SimpleHarness (base.py): the same decide(), stop(),
    permission wait and time limit, so a call waits for the reader in the same way in both."""

    # Attached files are saved in /data, pi's tools' working folder, and named in the question; an
    # image the model reads also goes with the prompt, as pi sends images (message()).
    takes_attachments = True

    def __init__(
        self,
        llm: Backend | None,
        history: list[dict],
        user_text: str,
        settings: RunSettings,
        emit: Callable[[dict], None],
        files: Path | None = None,
        attachments: Sequence[media.Attachment] = (),
    ):
        if llm is None and not settings.pi_model:
            raise ValueError(
                "PiHarness needs this page's model, or one of pi's own (settings.pi_model)"
            )
        self.id = uuid.uuid4().hex[:12]
        # With pi's own model nothing runs here; run_start reports the harness as pi.
        self.llm = None if settings.pi_model else llm
        self.settings = replace(settings, harness="pi")
        # The reader's turn as SimpleHarness keeps it (media parts, then the text), for the panels.
        question = media.user_content(user_text, list(attachments))
        self.messages = [*history, {"role": "user", "content": question}]
        # A follow-up starts pi again on the session it kept in the conversation's folder (session.py).
        self.follow_up = bool(history)
        self.files = files or data_folder.create()  # the folder pi's tools see as /data
        # What pi gives the model: its own tools (run in the sandbox), or the book's (settings.pi_tools).
        self.own_tools = settings.pi_tools == "pi"
        self.tools = {} if self.own_tools else tools_for(settings)
        self.tool_names = pi_tool_names(settings) if self.own_tools else list(self.tools)
        self._emit = emit
        self.reader = Reader(self.settings, self.emit)  # permission, Stop and the time limit
        self.endpoint: ModelEndpoint | None = None
        self.pi: PiProcess | None = None
        self.user_text = user_text
        self.attachments = list(attachments)
        self.step = 0
        self._requests = 0  # provider requests pi has reported; the endpoint serves them in order
        self._served = 0
        self._request_seen = threading.Condition()
        self._prev_payload: list = []
        self._turn: dict = {}  # this step's timings, for model_end

    def run(self) -> None:
        # [quote:start]
        s = self.settings
        model = s.pi_model or self.llm.model_id
        self.emit(
            "run_start",
            run_id=self.id,
            harness="pi",
            model=model,
            family=self.llm.family.key if self.llm else "",
            settings=asdict(s),
            tools=self.tool_names,
            question=self.messages[-1]["content"],
            # This page's model's facts; pi's own model is its provider's, with none to tell.
            **(model_facts(self.llm) if self.llm else {}),
        )
        agent_dir = Path(tempfile.mkdtemp(prefix="agentloop-pi-agent-"))  # never the user's ~/.pi
        # pi's copy of the session (pi never opens a path in /data), in a folder of its own: pi makes a
        # new session in place of one that lies in its agent dir itself.
        own_session = agent_dir / "session" / "session.jsonl"
        own_session.parent.mkdir()
        try:
            if self.follow_up:
                session.take(self.files, own_session)
            if self.llm is not None:
                self.endpoint = ModelEndpoint(
                    self.llm, s, self._emit, self._step_for_request, hold=self.reader.hold
                )
                self.endpoint.start()
            write_agent_dir(agent_dir, self.endpoint, self.llm, s)
            self.pi = PiProcess(
                pi_command(own_session, self.tool_names if self.own_tools else None),
                PI_CWD,
                pi_env(agent_dir, self.tools, self.files, s.pi_tools),
            )
            provider, model_id = (
                split_model(s.pi_model) if s.pi_model else (PROVIDER, pi_model_id(self.llm))
            )
            self.pi.command("set_model", provider=provider, modelId=model_id)
            self.pi.command("set_thinking_level", level="medium" if s.thinking else "off")
            self.pi.command("set_auto_retry", enabled=False)
            # Sent without waiting: its answer comes among the run's records.
            self.pi.send("prompt", **self._message())
            stop_reason, final = self._follow()
        # [/quote:start]
        except PiFailed as e:
            self.emit("error", message={"en": f"pi failed: {e}", "zh": f"pi 執行失敗：{e}"})
            stop_reason, final = "error", ""
        except data_folder.Refused as e:  # the session the model's code could have changed
            self.emit(
                "error",
                message={
                    "en": f"pi's session in this conversation cannot be continued: {e} "
                    "Start a new conversation.",
                    "zh": f"無法接續這個對話中 pi 的工作階段：{e} 請開始新的對話。",
                },
            )
            stop_reason, final = "error", ""
        finally:
            self.reader.stop()  # ends any wait still open (the endpoint's, for a request)
            if self.endpoint:
                self.endpoint.close()
            if self.pi:
                self.pi.close()
                self._keep_session(own_session)
            shutil.rmtree(agent_dir, ignore_errors=True)
        self._keep_conversation(final)
        self.emit(
            "run_end",
            stop_reason=stop_reason,
            final=final,
            steps=self.step,
            ms=self.reader.ms(),
        )

    # [quote:follow]
    def _follow(self) -> tuple[str, str]:
        """Turn pi's records into events until pi settles; stop, the time limit or max_steps abort
        it."""
        stop_reason, final, aborted_at = "final", "", None
        while True:
            if aborted_at is None and self.reader.should_stop():
                stop_reason, aborted_at = self.reader.why_stopped(), time.monotonic()
                self.pi.send("abort")
            if aborted_at is not None and time.monotonic() - aborted_at > SETTLE_S:
                raise PiFailed(f"pi did not settle within {SETTLE_S:.0f} s of being stopped")
            record = self.pi.next_record(timeout=0.1)
            if record is None:
                continue
            kind = record.get("type")
            if kind == "agent_settled":
                return stop_reason, final
            if kind == "turn_start" and aborted_at is not None:
                continue  # a turn pi began before the abort reached it: no step of the reader's
            if kind == "turn_start" and self.step >= self.settings.max_steps and aborted_at is None:
                stop_reason, aborted_at = "max_steps", time.monotonic()
                self.pi.send("abort")
            elif kind == "message_end" and record["message"].get("role") == "assistant":
                finish = self._model_end(record["message"])
                if finish == "error" and stop_reason == "final":
                    stop_reason = "error"
                final = text_of_message(record["message"]) if finish == "stop" else final
            else:
                self._handle(kind, record)

    # [/quote:follow]

    # [quote:handle]
    def _handle(self, kind: str, r: dict) -> None:
        """One of pi's records as the book's events; records the book has no event for are passed
        over."""
        if kind == "turn_start":
            self.step += 1
            self._turn = {"started": time.perf_counter(), "first": None}
            self.emit("step_start", step=self.step)
        elif kind == "extension_ui_request":
            self._ui_request(r)
        elif kind == "message_update":
            update = r.get("assistantMessageEvent") or {}
            if self._turn.get("first") is None:
                self._turn["first"] = time.perf_counter()
            channel = DELTA_CHANNELS.get(update.get("type"))
            if update.get("type") == "toolcall_start":  # the call's name, before its arguments
                channel = "tool_call"
                gap = "\n" if self._turn.get("wrote") else ""
                update = {"delta": gap + tool_name(update) + " "}
            if channel and self.llm is None:  # this page's model already sent every token
                self._turn["wrote"] = True
                self.emit("delta", step=self.step, channel=channel, text=update.get("delta", ""))
        elif kind == "tool_execution_start" and not r.get("parentToolCallId"):
            self.emit(
                "tool_call",
                step=self.step,
                call_id=r["toolCallId"],
                name=r["toolName"],
                args=r.get("args") or {},
            )
        elif kind == "tool_execution_end" and not r.get("parentToolCallId"):
            self.emit(
                "tool_result",
                step=self.step,
                call_id=r["toolCallId"],
                name=r["toolName"],
                output=text_of_message(r.get("result") or {}),
                is_error=bool(r.get("isError")),
                ms=float(r.get("durationMs") or 0.0),
            )

    # [/quote:handle]

    def _ui_request(self, r: dict) -> None:
        """The extension's questions: a provider request to show, a tool call to approve; other
        dialogs are dismissed (no extension but ours is loaded)."""
        method = r.get("method")
        if method == "notify" and r.get("message", "").startswith(REQUEST_MARK):
            self._request(json.loads(r["message"][len(REQUEST_MARK) :]))
        elif method == "confirm" and r.get("title") == PERMISSION_TITLE:
            call = json.loads(r.get("message") or "{}")
            approved = self.reader.ask(self.step, call.get("call_id", ""))
            self.pi.respond(r["id"], confirmed=bool(approved))
        elif method in ("select", "confirm", "input", "editor"):
            self.pi.respond(r["id"], cancelled=True)

    # [quote:request]
    def _request(self, payload: dict) -> None:
        """pi's request to its provider: pi sends the whole conversation every time; `added_from`
        marks where this step's new messages start, as `context.added_from` does for the prompt."""
        messages = payload.get("messages") or []
        shared = 0
        while (
            shared < min(len(messages), len(self._prev_payload))
            and messages[shared] == self._prev_payload[shared]
        ):
            shared += 1
        self._prev_payload = messages
        self.emit("request", step=self.step, payload=payload, added_from=shared)
        with self._request_seen:
            self._requests += 1
            self._request_seen.notify_all()

    # [/quote:request]

    def _message(self) -> dict:
        """The prompt command's fields: the question, naming every attached file by its path in
        /data, and the images the model reads (their host copies, never /data's) as pi takes them."""
        names = "".join(f"\nAttached: /data/{a.name}" for a in self.attachments)
        images = [
            {
                "type": "image",
                "data": base64.b64encode(Path(a.path).read_bytes()).decode(),
                "mimeType": image_mime(a.path),
            }
            for a in self.attachments
            if a.kind == "image" and a.path
        ]
        return {"message": self.user_text + names, **({"images": images} if images else {})}

    def _keep_session(self, own_session: Path) -> None:
        """pi's session back in the conversation's folder, for the next question in it."""
        try:
            session.keep(own_session, self.files)
        except OSError as e:  # the code put a folder in its place, or filled /data
            self.emit(
                "error",
                message={
                    "en": f"pi's session could not be kept in /data ({e.strerror}): a follow-up "
                    "question will not continue it.",
                    "zh": f"無法把 pi 的工作階段存進 /data（{e.strerror}）：後續提問將無法接續。",
                },
            )

    def _keep_conversation(self, final: str) -> None:
        """The conversation as SimpleHarness keeps it: pi's last request, as the endpoint read it,
        and the final answer (pi's own models: the question and the answer alone)."""
        served = self.endpoint.conversation if self.endpoint else []
        last_request = served or self.messages
        self.messages = [m for m in last_request if m["role"] != "system"]
        if final:
            self.messages.append({"role": "assistant", "content": final})

    def _step_for_request(self) -> int:
        """The endpoint's step for the request it just received: the step whose `request` event came
        from pi's records (pi writes the record before it sends the request; this waits for it to be
        read)."""
        with self._request_seen:
            self._request_seen.wait_for(
                lambda: self._requests > self._served or self.reader.stopped(), timeout=10
            )
            self._served += 1
            return self.step

    def _model_end(self, message: dict) -> str:
        """message_end -> `model_end`: the endpoint's generation figures (or pi's for its own
        model), pi's usage and cost, and the time to first output. Returns pi's stop reason."""
        usage = dict(message.get("usage") or {})
        first = self._turn.get("first")
        usage["first_output_ms"] = (
            round((first - self._turn["started"]) * 1000, 1) if first else None
        )
        stop = message.get("stopReason", "stop")
        done = self.endpoint.done.pop(self.step, None) if self.endpoint else None
        if done is None:  # pi's own model, or a request that never reached the endpoint
            elapsed = time.perf_counter() - (
                first or self._turn.get("started", time.perf_counter())
            )
            done = {
                "finish": PI_FINISH.get(stop, "stop_token"),
                "stop_piece": None,
                "n_tokens": int(usage.get("output") or 0),
                "decode_ms": round(elapsed * 1000, 1),
                "tok_per_s": None,
                "mtp": None,
                "raw": text_of_message(message, thinking=True),
            }
        self.emit("model_end", step=self.step, usage=usage, **done)
        # After the reader's stop the endpoint ends pi's stream before its finish: pi may call that an
        # error before our abort reaches it, but the run ended because the reader stopped it.
        if stop == "error" and not self.reader.stopped():
            error = message.get("errorMessage") or "no message"
            self.emit(
                "error",
                step=self.step,
                message={
                    "en": f"pi's model request failed: {error}",
                    "zh": f"pi 的模型請求失敗：{error}",
                },
            )
        return stop

    # -- the reader's side: the Reader's, and the endpoint's stop --------------------------------------

    def emit(self, kind: str, **fields) -> None:
        """Send an event with the run's clock and the line that sent it, as SimpleHarness does."""
        self._emit(events.make(kind, **fields, t_ms=self.reader.ms(), src=events.caller(skip=1)))

    def decide(self, call_id: str, approve: bool) -> bool:
        return self.reader.decide(call_id, approve)

    def stop(self) -> None:
        """End the run: the endpoint stops before its next token, and pi is told to abort."""
        self.reader.stop()
        if self.endpoint:
            self.endpoint.stop()
        with self._request_seen:
            self._request_seen.notify_all()


# pi's stop reasons -> the book's `finish`, for a model_end the endpoint did not make (pi's own models).
PI_FINISH = {
    "stop": "stop_token",
    "toolUse": "stop_token",
    "length": "max_new_tokens",
    "aborted": "user_stopped",
    "error": "stop_token",
}


def split_model(name: str) -> tuple[str, str]:
    """settings.pi_model ("provider/id") as the two parts pi's set_model takes."""
    provider, _, model_id = name.partition("/")
    if not model_id:
        raise ValueError(f"pi's model must be written provider/id, not {name!r}")
    return provider, model_id


def image_mime(path: str) -> str:
    """An image's MIME type, by what Pillow reads in it (media.py has checked it is one)."""
    from PIL import Image

    with Image.open(path) as image:
        return Image.MIME.get(image.format or "", "image/png")


def tool_name(update: dict) -> str:
    """The tool a `toolcall_start` update begins: its name in the message so far (pi-ai's
    AssistantMessageEvent carries the partial message and the call's index in it)."""
    if update.get("toolName"):
        return str(update["toolName"])
    parts = (update.get("partial") or {}).get("content") or []
    index = update.get("contentIndex")
    part = parts[index] if isinstance(index, int) and 0 <= index < len(parts) else {}
    return str(part.get("name") or "") if isinstance(part, dict) else ""


def text_of_message(message: dict, thinking: bool = False) -> str:
    """The text parts of a pi message or tool result (with thinking parts too if asked)."""
    kinds = ("text", "thinking") if thinking else ("text",)
    parts = message.get("content") or []
    if isinstance(parts, str):
        return parts
    return "".join(
        p.get("text") or p.get("thinking") or ""
        for p in parts
        if isinstance(p, dict) and p.get("type") in kinds
    )
