"""PiHarness: the same question through pi, a real coding agent, in RPC mode (chapter 16).

pi runs its own loop: it sends the conversation to a model, runs the tools the model calls, and goes
round again. PiHarness starts it as a child process for each question and turns every record pi
writes into the book's events, so the server, the CLI and the panels take it exactly as they take
SimpleHarness (the same constructor, the same events). The model pi asks is this page's model,
served to pi by ModelEndpoint on 127.0.0.1 (every token then shows as in the built-in harness), or
one of pi's own providers (`delta` events: text without token boundaries). pi starts in a private
agent dir (models.json, settings.json with pi's retries off), with none of the user's extensions,
skills, prompt templates, themes or context files, and one extension of ours (pi_extension.ts): it
reports each provider request and asks the reader before every tool call.

pi never starts in the conversation's folder, and its tools never run there: the model's code writes
that folder, and pi reads `.pi/SYSTEM.md` from its working folder, and `python -m` imports from it. The
extension is told the folder's path (AGENTLOOP_FOLDER) and runs each tool as `python -I -m agentloop
tool` from pi's own working folder: isolated, so neither the working folder nor PYTHONPATH is on
sys.path and agentloop comes from the virtual environment (sandbox/data_folder.py: host code never trusts
/data).

Left out: follow-up questions (each question starts a fresh pi), images, pi's sessions and
compaction.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
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
from agentloop.harnesses.settings import RunSettings, tools_for
from agentloop.harnesses.simple_harness import SYSTEM_NO_TOOLS, SYSTEM_WITH_TOOLS
from agentloop.model_backends import Backend
from agentloop.paths import ROOT
from agentloop.sandbox import data_folder
from agentloop.tools import Tool

# pi and the Node it needs (>= 22.19), both from `npm ci` (package.json); never the system's node.
NODE = ROOT / "node_modules" / "node" / "bin" / "node"
PI_CLI = (
    ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
)
EXTENSION = Path(__file__).with_name("pi_extension.ts")
PROVIDER = "agent-loop"  # the name models.json gives this page's model in pi
REQUEST_MARK = "agentloop:request "  # the extension's notify that carries a provider request
PERMISSION_TITLE = "agentloop:permission"
# pi caps max_tokens at the window less 4096 tokens it keeps for providers that count the input
# higher than its estimate (pi-ai's clampMaxTokensToContext). The endpoint counts with the model's
# own tokenizer, so the window pi is told carries that margin on top: a tiny model's 4096-token
# window would leave pi 1 token.
PI_CONTEXT_MARGIN = 4096
SETTLE_S = 10.0  # how long pi may take to settle after an abort before it counts as hung
# pi's settings for a run: its own retries off, so one failed request is one error the reader sees.
PI_SETTINGS = {"retry": {"enabled": False, "provider": {"maxRetries": 0}}, "quietStartup": True}
# pi's record names -> the book's channels for `delta` (pi's own models only).
DELTA_CHANNELS = {
    "thinking_delta": "thought",
    "text_delta": "content",
    "toolcall_delta": "tool_call",
}


class PiUnavailable(RuntimeError):
    """pi or its Node is missing: `npm ci` installs both."""


class PiFailed(RuntimeError):
    """pi ended, hung or refused a command in the middle of a run."""


class PiHarness:
    """pi's loop, with the same Reader as SimpleHarness (base.py): the same decide(), stop(),
    permission wait and time limit, so a call waits for the reader in the same way in both."""

    takes_attachments = False  # not yet: files in /data are named in the question instead

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
        if history:
            raise ValueError(
                "PiHarness starts a fresh pi for each question: follow-ups are not supported yet"
            )
        if attachments:
            raise ValueError("PiHarness takes no attachments: name the files in the question")
        if llm is None and not settings.pi_model:
            raise ValueError(
                "PiHarness needs this page's model, or one of pi's own (settings.pi_model)"
            )
        self.id = uuid.uuid4().hex[:12]
        # With pi's own model nothing runs here; run_start reports the harness as pi.
        self.llm = None if settings.pi_model else llm
        self.settings = replace(settings, harness="pi")
        self.messages = [*history, {"role": "user", "content": user_text}]
        self.files = files or data_folder.create()  # the folder pi's tools see as /data
        self.tools = tools_for(settings)
        self._emit = emit
        self.reader = Reader(self.settings, self.emit)  # permission, Stop and the time limit
        self.endpoint: ModelEndpoint | None = None
        self.pi: PiProcess | None = None
        self.user_text = user_text
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
            tools=list(self.tools),
            question=self.messages[-1]["content"],
        )
        agent_dir = Path(tempfile.mkdtemp(prefix="agentloop-pi-agent-"))  # never the user's ~/.pi
        try:
            if self.llm is not None:
                self.endpoint = ModelEndpoint(
                    self.llm, s, self._emit, next_step=self._step_for_request
                )
                self.endpoint.start()
            write_agent_dir(agent_dir, self.endpoint, self.llm, s)
            self.pi = PiProcess(pi_command(), agent_dir, pi_env(agent_dir, self.tools, self.files))
            provider, model_id = (
                split_model(s.pi_model) if s.pi_model else (PROVIDER, pi_model_id(self.llm))
            )
            self.pi.command("set_model", provider=provider, modelId=model_id)
            self.pi.command("set_thinking_level", level="medium" if s.thinking else "off")
            self.pi.command("set_auto_retry", enabled=False)
            # Sent without waiting: its answer comes among the run's records.
            self.pi.send("prompt", message=self.user_text)
            stop_reason, final = self._follow()
        # [/quote:start]
        except PiFailed as e:
            self.emit("error", message={"en": f"pi failed: {e}", "zh": f"pi 執行失敗：{e}"})
            stop_reason, final = "error", ""
        finally:
            self.reader.stop()  # ends any wait still open (the endpoint's, for a request)
            if self.endpoint:
                self.endpoint.close()
            if self.pi:
                self.pi.close()
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
            if channel and self.llm is None:  # this page's model already sent every token
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


PI_FINISH = {
    "stop": "stop_token",
    "toolUse": "stop_token",
    "length": "max_new_tokens",
    "aborted": "user_stopped",
    "error": "stop_token",
}


class PiProcess:
    """pi in RPC mode as a child process: commands on stdin, records on stdout (one JSON object a
    line), responses matched to their commands by id, since they can come back out of order."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]):
        # Its own process group, so closing ends pi and everything it started (a tool's Python, a
        # shell).
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._records: queue.Queue = queue.Queue()
        self._responses: dict[str, dict] = {}
        self._stderr: list[bytes] = []
        self._held: list[dict] = []  # records read while waiting for a command's response, in order
        self._ids = 0
        threading.Thread(target=self._read, daemon=True, name="pi-stdout").start()
        threading.Thread(target=self._read_stderr, daemon=True, name="pi-stderr").start()

    def send(self, kind: str, **fields) -> str:
        self._ids += 1
        command_id = f"agentloop-{self._ids}"
        self._write({"id": command_id, "type": kind, **fields})
        return command_id

    def command(self, kind: str, timeout: float = 30.0, **fields) -> dict:
        """Send a command and wait for its own response (others that arrive meanwhile are kept for
        theirs)."""
        command_id = self.send(kind, **fields)
        deadline = time.monotonic() + timeout
        while command_id not in self._responses:
            if time.monotonic() > deadline:
                raise PiFailed(f"no answer to {kind} within {timeout:.0f} s")
            record = self.next_record(timeout=0.1, keep_others=True)
            if record is not None:
                self._held.append(record)
        response = self._responses.pop(command_id)
        if not response.get("success"):
            raise PiFailed(f"{kind} was refused: {response.get('error')}")
        return response.get("data") or {}

    def next_record(self, timeout: float, keep_others: bool = False) -> dict | None:
        """The next record that is not a response (responses are filed by id). Raises PiFailed if pi
        ended."""
        if not keep_others and self._held:
            return self._held.pop(0)
        try:
            record = self._records.get(timeout=timeout)
        except queue.Empty:
            return None
        if record is None:
            code = self.proc.wait()
            tail = b"".join(self._stderr).decode(errors="replace").strip()[-500:]
            raise PiFailed(f"pi ended unexpectedly (exit code {code}){': ' + tail if tail else ''}")
        if record.get("type") == "response":
            self._responses[record.get("id")] = record
            return None
        return record

    def respond(self, ui_id: str, **answer) -> None:
        self._write({"type": "extension_ui_response", "id": ui_id, **answer})

    def close(self) -> None:
        """Close stdin (pi then exits by itself), and end the whole process group whatever state it
        is in."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(
                self.proc.pid, signal.SIGKILL
            )  # pi's children too, even when pi itself has exited
        except ProcessLookupError:
            pass
        self.proc.wait()

    def _write(self, record: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(record).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise PiFailed("pi is not running") from None

    def _read(self) -> None:
        # Records end at LF only (a JSON string may hold U+2028); a binary stream splits on nothing
        # else.
        for line in self.proc.stdout:
            line = line.strip()
            if line:
                try:
                    self._records.put(json.loads(line))
                except json.JSONDecodeError:
                    self._stderr.append(b"(not JSON on stdout) " + line[:200] + b"\n")
        self._records.put(None)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-50]


MENU_EVERY_S = 60.0  # pi's own models are asked for at most this often: each ask starts a pi
NO_CREDENTIALS = {
    "en": "pi has no credentials on this machine: none of its providers has an API key in the "
    "server's environment (for example ANTHROPIC_API_KEY or OPENAI_API_KEY), so pi can only ask "
    "this page's model.",
    "zh": "這台機器上的 pi 沒有任何憑證：伺服器的環境變數裡沒有任何供應商的 API 金鑰"
    "（例如 ANTHROPIC_API_KEY 或 OPENAI_API_KEY），所以 pi 只能使用本頁的模型。",
}
_menu: dict = {}
_menu_lock = threading.Lock()


def pi_own_models(clock: Callable[[], float] = time.monotonic) -> dict:
    """The models pi has credentials for, from RPC get_available_models in a private agent dir (so
    only keys in the environment count, never the user's ~/.pi), asked at most once every
    MENU_EVERY_S seconds. {"models": [{id: "provider/id", name, provider, reasoning, input, cost}],
    "message": {en, zh} | None}"""
    with _menu_lock:
        if _menu and clock() - _menu["at"] < MENU_EVERY_S:
            return _menu["value"]
        agent_dir = Path(tempfile.mkdtemp(prefix="agentloop-pi-menu-"))
        try:
            (agent_dir / "settings.json").write_text(json.dumps(PI_SETTINGS))
            pi = PiProcess(pi_command(), agent_dir, pi_env(agent_dir, {}))
            try:
                found = pi.command("get_available_models").get("models") or []
            finally:
                pi.close()
        finally:
            shutil.rmtree(agent_dir, ignore_errors=True)
        models = [
            {
                "id": f"{m['provider']}/{m['id']}",
                "name": m.get("name") or m["id"],
                "provider": m["provider"],
                "reasoning": bool(m.get("reasoning")),
                "input": m.get("input") or ["text"],
                "cost": m.get("cost") or {},
            }
            for m in found
        ]
        value = {"models": models, "message": None if models else NO_CREDENTIALS}
        _menu.update(at=clock(), value=value)
        return value


def pi_command() -> list[str]:
    """pi in RPC mode with nothing of the user's: no extensions, skills, templates, themes, context
    files or MCP, no session file; our extension; pi's built-in tools off (the extension registers
    ours instead)."""
    if not NODE.exists() or not PI_CLI.exists():
        raise PiUnavailable(
            f"pi is not installed: run `npm ci` in {ROOT} (it brings pi and Node 22)"
        )
    return [
        str(NODE),
        str(PI_CLI),
        "--mode",
        "rpc",
        "--no-session",
        "--offline",
        "--no-approve",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--no-mcp",
        "--no-builtin-tools",
        "-e",
        str(EXTENSION),
    ]


def pi_env(agent_dir: Path, tools: dict[str, Tool], folder: Path | None = None) -> dict[str, str]:
    """pi's environment: the server's (pi's own providers read their keys from it) without the
    user's PI_ settings, plus what the extension needs: the prompt, the tools, the interpreter
    that runs them (isolated: see the module's docstring) and the conversation's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    env.update(
        PI_CODING_AGENT_DIR=str(agent_dir),
        PI_OFFLINE="1",
        PI_TELEMETRY="0",
        AGENTLOOP_SYSTEM_PROMPT=SYSTEM_WITH_TOOLS if tools else SYSTEM_NO_TOOLS,
        AGENTLOOP_PYTHON=sys.executable,
        AGENTLOOP_TOOLS=json.dumps(
            [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools.values()
            ]
        ),
        AGENTLOOP_FOLDER=str(folder or ""),
    )
    return env


def write_agent_dir(
    agent_dir: Path, endpoint: ModelEndpoint | None, llm: Backend | None, settings: RunSettings
) -> None:
    """pi's private agent dir: settings with its retries off, and models.json naming this page's
    model."""
    (agent_dir / "settings.json").write_text(json.dumps(PI_SETTINGS))
    if endpoint is None:
        return
    model = {
        "id": pi_model_id(llm),
        "name": f"{pi_model_id(llm)} (this page's model)",
        "reasoning": True,
        "input": ["text"],
        "contextWindow": llm.context_length + PI_CONTEXT_MARGIN,
        "maxTokens": settings.max_new_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    PROVIDER: {
                        "baseUrl": endpoint.base_url,
                        "api": "openai-completions",
                        "apiKey": endpoint.secret,
                        "compat": {
                            "supportsDeveloperRole": False,
                            "supportsReasoningEffort": False,
                            "supportsStore": False,
                            "maxTokensField": "max_tokens",
                        },
                        "models": [model],
                    }
                }
            },
            indent=2,
        )
    )


def pi_model_id(llm: Backend) -> str:
    """The model's name in pi's menu: its folder's or repository's last part."""
    return Path(llm.model_id).name


def split_model(name: str) -> tuple[str, str]:
    provider, _, model_id = name.partition("/")
    if not model_id:
        raise ValueError(f"pi's model must be written provider/id, not {name!r}")
    return provider, model_id


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
