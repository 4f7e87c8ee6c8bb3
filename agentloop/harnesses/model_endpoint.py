"""ModelEndpoint: this page's model as an OpenAI-compatible `/v1/chat/completions` for pi (chapter
16).

pi talks to model providers over HTTP. To let it drive the model loaded here, this serves one
streamed chat completion per request on 127.0.0.1, inside the same process: the request's messages
are turned back into the conversation SimpleHarness keeps, rendered and encoded by the same backend,
and generated one token at a time. Every token goes to the book as the same `token` events the
built-in harness sends, while its text goes back to pi as `reasoning_content` or `content` deltas; a
tool call is parsed by the family and sent as OpenAI `tool_calls`. Stopping the run, or pi closing
the connection, ends generation before the next token.

Only the pi that PiHarness started may call it: each endpoint has its own secret, written into pi's
models.json as the API key, and a request from a browser (it carries an Origin header) is refused.
Left out: non-streamed completions, n > 1, images, logprobs in the response (the book has them as
events).
"""

from __future__ import annotations

import hmac
import json
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agentloop import events
from agentloop.harnesses.simple_harness import (
    RunSettings,
    common_prefix,
    role_counts,
    role_tokens,
)
from agentloop.model_backends import Backend

MAX_BODY = 8 << 20  # bytes: a whole conversation fits; a runaway request does not
# What each of the family's output channels becomes in the OpenAI stream; the rest is parsed at the
# end.
DELTA_FIELDS = {"thought": "reasoning_content", "content": "content"}
FINISH = {"stop_token": "stop", "max_new_tokens": "length", "user_stopped": "stop"}


class BadRequest(ValueError):
    """A request the endpoint cannot serve; its message goes back to the client with status 400."""


class ModelEndpoint:
    def __init__(
        self,
        llm: Backend,
        settings: RunSettings,
        emit: Callable[[dict], None],
        next_step: Callable[[], int] | None = None,
    ):
        self.llm = llm
        self.settings = settings
        self.secret = secrets.token_urlsafe(32)  # pi's API key for this endpoint, and no one else's
        self._emit = emit
        self._next_step = next_step or self._count_steps
        self._steps = 0
        self._prev_prompt = ""
        self._stop = threading.Event()
        self.done: dict[int, dict] = {}  # step -> the backend's `done`, for PiHarness's model_end
        self.conversation: list[dict] = []  # the last request, as SimpleHarness's messages
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> str:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="model-endpoint", daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """End the generation in progress before its next token, and refuse new ones."""
        self._stop.set()

    def close(self) -> None:
        self.stop()
        self._server.shutdown()
        self._server.server_close()

    def authorized(self, header: str | None) -> bool:
        expected = f"Bearer {self.secret}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def _count_steps(self) -> int:
        self._steps += 1
        return self._steps

    # -- one completion
    # -------------------------------------------------------------------------------------------

    def complete(self, request: dict, send: Callable[[dict | None], bool]) -> None:
        """Generate one reply to `request`, calling send(chunk) for each OpenAI chunk (None: a
        keep-alive), which returns False once the client has gone."""
        # [quote:complete]
        messages, tools = conversation_from(request, self.llm.family.thinking_key)
        schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools or []}
        sampling = sampling_for(request, self.settings)
        step = self._next_step()
        prompt = self.llm.render(messages, tools, self.settings.thinking)
        encoded = self.llm.encode(prompt)
        self.emit(
            "context",
            step=step,
            prompt=encoded.text,
            n_tokens=encoded.n_tokens,
            added_from=common_prefix(prompt, self._prev_prompt) if self._prev_prompt else 0,
            media_tokens=encoded.media_tokens,
            context_length=self.llm.context_length,
            roles=role_counts(messages),
            role_tokens=role_tokens(self.llm, messages, tools, self.settings.thinking, encoded),
        )
        self._prev_prompt, self.conversation = prompt, messages
        # [/quote:complete]

        # [quote:stream]
        gone = threading.Event()
        done: dict = {}
        for ev in self.llm.generate(
            encoded, sampling, lambda: self._stop.is_set() or gone.is_set()
        ):
            kind = ev.pop("type")
            if kind == "done":
                done = ev
                continue
            self.emit(kind, step=step, **ev)  # the book sees every token, with its probabilities
            field = DELTA_FIELDS.get(ev.get("channel"))
            chunk = delta_chunk({field: ev["text"]}) if field and ev.get("text") else None
            if kind == "token" and not send(chunk):  # pi went away: no next token
                gone.set()
        self.done[step] = done
        if done["finish"] == "user_stopped" or gone.is_set():
            return
        parsed = self.llm.family.parse(
            done["raw"],
            schemas,
            thinking_open=encoded.text.endswith(self.llm.family.thought_prefix),
        )
        # [/quote:stream]
        # [quote:finish]
        if parsed.error:  # pi reads the unreadable call as text, as the model wrote it
            send(delta_chunk({"content": parsed.error.text}))
        calls = [
            {
                "index": i,
                "id": f"call_{step}_{i}",
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False),
                },
            }
            for i, c in enumerate(parsed.tool_calls)
        ]
        if calls:
            send(delta_chunk({"tool_calls": calls}))
        finish = "tool_calls" if calls else FINISH[done["finish"]]
        send(delta_chunk({}, finish))
        send(
            {
                **delta_chunk({}),
                "choices": [],
                "usage": {
                    "prompt_tokens": encoded.n_tokens,
                    "completion_tokens": done["n_tokens"],
                    "total_tokens": encoded.n_tokens + done["n_tokens"],
                },
            }
        )
        # [/quote:finish]

    def emit(self, kind: str, **fields) -> None:
        self._emit(events.make(kind, **fields))


def conversation_from(request: dict, thinking_key: str) -> tuple[list[dict], list[dict] | None]:
    """An OpenAI chat request as the messages SimpleHarness keeps: a tool call's arguments a dict
    again, the thinking under the family's key, a tool result with its tool's name. Raises
    BadRequest for what cannot be."""
    if not isinstance(request, dict):
        raise BadRequest("the body must be a JSON object")
    raw = request.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("`messages` must be a non-empty list")
    tools = request.get("tools") or None
    if tools is not None and (
        not isinstance(tools, list) or not all(_is_function(t) for t in tools)
    ):
        raise BadRequest("`tools` must be a list of {type: function, function: {name, parameters}}")
    names: dict[str, str] = {}  # tool call id -> tool name, for the results that answer them
    messages = []
    for i, m in enumerate(raw):
        role = m.get("role") if isinstance(m, dict) else None
        if role in ("system", "developer"):
            messages.append({"role": "system", "content": text_of(m.get("content"), i)})
        elif role == "user":
            messages.append({"role": "user", "content": text_of(m.get("content"), i)})
        elif role == "assistant":
            messages.append(_assistant(m, i, thinking_key, names))
        elif role == "tool":
            call_id = m.get("tool_call_id")
            if call_id not in names:
                raise BadRequest(
                    f"messages[{i}]: tool_call_id {call_id!r} answers no earlier tool call"
                )
            messages.append(
                {
                    "role": "tool",
                    "name": names[call_id],
                    "tool_call_id": call_id,
                    "content": text_of(m.get("content"), i),
                }
            )
        else:
            raise BadRequest(f"messages[{i}]: unknown role {role!r}")
    return messages, tools


def _assistant(m: dict, i: int, thinking_key: str, names: dict[str, str]) -> dict:
    thinking = m.get("reasoning_content") or m.get("reasoning") or ""
    message = {"role": "assistant", "content": text_of(m.get("content"), i), thinking_key: thinking}
    calls = []
    for call in m.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError as e:
            raise BadRequest(f"messages[{i}]: a tool call's arguments are not JSON: {e}") from None
        names[call.get("id")] = function.get("name")
        calls.append(
            {"type": "function", "function": {"name": function.get("name"), "arguments": arguments}}
        )
    if calls:
        message["tool_calls"] = calls
    return message


def text_of(content, i: int) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        if any(p.get("type") != "text" for p in content):
            raise BadRequest(
                f"messages[{i}]: only text parts are supported here, not images or audio"
            )
        return "".join(p.get("text", "") for p in content)
    raise BadRequest(f"messages[{i}]: content must be a string or a list of text parts")


def _is_function(tool) -> bool:
    return (
        isinstance(tool, dict)
        and tool.get("type") == "function"
        and isinstance(tool.get("function"), dict)
        and isinstance(tool["function"].get("name"), str)
    )


def sampling_for(request: dict, settings: RunSettings):
    """The run's sampling, with the request's max_tokens, temperature and top_p if it has them."""
    s = settings.sampling
    max_tokens = request.get("max_tokens", request.get("max_completion_tokens"))
    if max_tokens is not None:
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise BadRequest("`max_tokens` must be a positive integer")
        s = replace(s, max_new_tokens=min(max_tokens, s.max_new_tokens))
    for name in ("temperature", "top_p"):
        value = request.get(name)
        if value is not None:
            if not isinstance(value, (int, float)) or value < 0:
                raise BadRequest(f"`{name}` must be a number >= 0")
            s = replace(s, **{name: float(value)})
    return s


def delta_chunk(delta: dict, finish: str | None = None) -> dict:
    return {
        "id": "agentloop",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "agentloop",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _handler_for(endpoint: ModelEndpoint):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 (http.server's name)
            if self.headers.get("Origin") is not None:
                return self._error(403, "this endpoint serves pi only, not web pages")
            if not endpoint.authorized(self.headers.get("Authorization")):
                return self._error(
                    401, "missing or wrong API key: only the pi agentloop started may call"
                )
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._error(404, f"no endpoint {self.path}; there is /v1/chat/completions")
            try:
                request = self._body()
                if request.get("stream") is not True:
                    raise BadRequest("only streamed completions are served: set `stream` to true")
                conversation_from(
                    request, endpoint.llm.family.thinking_key
                )  # refuse before any header goes
                sampling_for(request, endpoint.settings)
            except BadRequest as e:
                return self._error(400, str(e))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                endpoint.complete(request, self._send)
            except Exception as e:  # after the headers: the error goes as the stream's last chunk
                self._send({"error": {"message": f"generation failed: {type(e).__name__}: {e}"}})
            self._write(b"data: [DONE]\n\n")
            self.close_connection = True

        def _body(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                raise BadRequest(f"the body must be JSON of 1 to {MAX_BODY} bytes")
            try:
                body = json.loads(self.rfile.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise BadRequest(f"the body is not JSON: {e}") from None
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            return body

        def _send(self, chunk: dict | None) -> bool:
            # Asked once per token, so a client that has closed its end stops the next token. A
            # keep-alive comment goes for tokens pi sees no text of.
            if self._client_gone():
                return False
            line = (
                b": token\n\n"
                if chunk is None
                else b"data: " + json.dumps(chunk).encode() + b"\n\n"
            )
            return self._write(line)

        def _client_gone(self) -> bool:
            """True once the client closed the connection: the socket reads as ended. (A write alone
            would notice one token later: the first write after a close still lands in a buffer.)"""
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            try:
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        def _write(self, data: bytes) -> bool:
            try:
                self.wfile.write(data)
                self.wfile.flush()
                return True
            except OSError:
                return False

        def _error(self, status: int, message: str) -> None:
            body = json.dumps(
                {"error": {"message": message, "type": "invalid_request_error", "code": status}}
            )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(
            self, *args
        ) -> None:  # the book's events say what happened; no access log on stderr
            pass

    return Handler
