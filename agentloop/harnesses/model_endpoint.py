"""ModelEndpoint: this page's model as an OpenAI-compatible `/v1/chat/completions` for pi (chapter
16).

pi talks to model providers over HTTP. To let it drive the model loaded here, this serves one
streamed chat completion per request on 127.0.0.1, inside the same process: the request's messages
are turned back into the conversation SimpleHarness keeps, rendered and encoded by the same backend,
and generated one token at a time. Every token goes to the book as the same `token` events the
built-in harness sends, while its text goes back to pi as `reasoning_content` or `content` deltas; a
tool call is parsed by the family and sent as OpenAI `tool_calls`. Stopping the run, or pi closing
the connection, ends generation before the next token. Each step goes at the run's pace (its Reader's
`hold`, pace.py): while it waits for the reader's Next, pi's stream waits with it.

It is served by uvicorn (HTTP/1.1 parsed by h11, on an asyncio loop in a thread of its own) running a
small ASGI app of Starlette's requests and responses, on a socket bound here to a port the OS picks.
Generation is blocking Python, so each completion runs on a worker thread that hands its chunks to the
loop; the loop notices pi going away and the worker stops before its next token.

Only the pi that PiHarness started may call it: each endpoint has its own secret, written into pi's
models.json as the API key, and a request from a browser (it carries an Origin header) is refused.
Any local process can reach loopback, though, and this runs inside the demo server's process, so what
a caller without the key can hold is bounded: the key is checked before the body is read (uvicorn
buffers at most 64 KiB of it meanwhile), a Content-Length over MAX_BODY is refused before reading, a
connection has `request_s` seconds to send its whole request, and at most `max_connections` are open
at once (guarded_http.py), with no thread for any of them.

Follows: OpenAI's streamed chat completions (`data:` chunks, then `data: [DONE]`), HTTP/1.1 as h11
reads it; images in a user message as base64 data URLs (pi sends an attached image so). Left out:
non-streamed completions, n > 1, images in a tool's result, logprobs in the response (the book has
them as events), keep-alive between requests (every response closes its connection; pi opens one per
request), chunked request bodies (pi sends a Content-Length), WebSockets, TLS (loopback only).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import uvicorn
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from agentloop import events, guarded_http, media
from agentloop.harnesses.pace import Hold, full_speed
from agentloop.harnesses.settings import RunSettings
from agentloop.harnesses.step import take_step
from agentloop.model_backends import Backend
from agentloop.sandbox import cleanup

PATH = "/v1/chat/completions"
MAX_BODY = 8 << 20  # bytes: a whole conversation fits; a runaway request does not
REQUEST_S = 10.0  # seconds to send a whole request: pi's takes milliseconds on loopback
MAX_CONNECTIONS = 16  # pi holds one at a time; the rest is slack, not service to anyone else
SHUTDOWN_S = 2  # close() lets a stream, already told to stop, end this long before cancelling it
# What each of the family's output channels becomes in the OpenAI stream; the rest is parsed at the
# end.
DELTA_FIELDS = {"thought": "reasoning_content", "content": "content"}
FINISH = {"stop_token": "stop", "max_new_tokens": "length", "user_stopped": "stop"}
# Every response closes its connection: pi opens one per request, and a connection left open after a
# refusal would be one more for a caller without the key to hold.
STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "close",
}


class BadRequest(ValueError):
    """A request the endpoint cannot serve; its message goes back to the client with `status`."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class ModelEndpoint:
    def __init__(
        self,
        llm: Backend,
        settings: RunSettings,
        emit: Callable[[dict], None],
        next_step: Callable[[], int] | None = None,
        *,
        hold: Hold = full_speed,
        request_s: float = REQUEST_S,
        max_connections: int = MAX_CONNECTIONS,
    ):
        self.llm = llm
        self.settings = settings
        self._hold = (
            hold  # the run's Reader.hold: its pace holds each step here as in SimpleHarness
        )
        self.secret = secrets.token_urlsafe(32)  # pi's API key for this endpoint, and no one else's
        self._emit = emit
        self._next_step = next_step or self._count_steps
        self._steps = 0
        self._prev_prompt = ""
        self._stop = threading.Event()
        self.done: dict[int, dict] = {}  # step -> the backend's `done`, for PiHarness's model_end
        self.conversation: list[dict] = []  # the last request, as SimpleHarness's messages
        self.images = Images()  # the images pi sends, decoded once each
        # Bound here, so base_url is known before start() and a client that comes early waits in
        # the backlog instead of being refused.
        self._socket = loopback_socket()
        self.base_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"
        self._server = uvicorn.Server(server_config(self, request_s, max_connections))
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="model-endpoint",
            daemon=True,
        )
        self._thread.start()
        while not self._server.started:  # a server that cannot start says so here, not to pi
            if not self._thread.is_alive():
                raise RuntimeError("the model endpoint did not start")
            time.sleep(0.01)
        return self.base_url

    def stop(self) -> None:
        """End the generation in progress before its next token, and refuse new ones."""
        self._stop.set()

    def close(self) -> None:
        """Stop, and end the server: uvicorn looks every 0.1 s, closes the socket and every
        connection, and waits up to SHUTDOWN_S for a stream to end."""
        self.stop()
        self._server.should_exit = True
        if self._thread is None:
            self._socket.close()
        else:
            self._thread.join()
        self.images.close()

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
        messages, tools = conversation_from(request, self.llm.family.thinking_key, self.images)
        step = self._next_step()
        gone = threading.Event()

        def stream(token: dict) -> None:
            """A token's text to pi as it comes (a keep-alive when pi sees none of it)."""
            field = DELTA_FIELDS.get(token.get("channel"))
            chunk = delta_chunk({field: token["text"]}) if field and token.get("text") else None
            if not send(chunk):  # pi went away: no next token
                gone.set()

        taken = take_step(
            self.llm,
            step,
            messages,
            tools,
            self.settings.thinking,
            sampling_for(request, self.settings),
            self.emit,
            lambda: self._stop.is_set() or gone.is_set(),
            self._prev_prompt,
            on_token=stream,
            hold=self._hold,
        )
        self._prev_prompt, self.conversation = taken.prompt, messages
        self.done[step] = taken.done
        if taken.parsed is None or gone.is_set():
            return
        parsed, encoded, done = taken.parsed, taken.encoded, taken.done
        # [/quote:complete]

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

    def complete_into(self, request: dict, chunks: Chunks) -> None:
        """complete(request) on a worker thread, its chunks into `chunks`; an error, once the
        stream's headers have gone, goes as its last chunk."""
        try:
            self.complete(request, chunks.send)
        except Exception as e:
            chunks.send({"error": {"message": f"generation failed: {type(e).__name__}: {e}"}})
        finally:
            chunks.end()


def conversation_from(
    request: dict, thinking_key: str, images: Images | None = None
) -> tuple[list[dict], list[dict] | None]:
    """An OpenAI chat request as the messages SimpleHarness keeps: a tool call's arguments a dict
    again, the thinking under the family's key, a tool result with its tool's name, a user's images
    as the media parts SimpleHarness gives a question (`images` decodes them; without, they are
    only checked to be images as data URLs). Raises BadRequest for what cannot be."""
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
            messages.append(
                {"role": "user", "content": user_content_of(m.get("content"), i, images)}
            )
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


def user_content_of(content, i: int, images: Images | None):
    """A user message's content: its text, or with images, their media parts first and then the
    text, as media.user_content writes a question with attachments."""
    if not isinstance(content, list) or all(
        isinstance(p, dict) and p.get("type") == "text" for p in content
    ):
        return text_of(content, i)
    parts, texts = [], []
    for p in content:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text":
            texts.append(p.get("text", ""))
        elif kind == "image_url":
            url = (
                (p.get("image_url") or {}).get("url")
                if isinstance(p.get("image_url"), dict)
                else None
            )
            data = image_bytes(url, i)
            parts.append(images.part(data) if images else {"type": "image", "path": None})
        else:
            raise BadRequest(
                f"messages[{i}]: only text and image parts are supported here, not {kind!r}"
            )
    return [*parts, {"type": "text", "text": "".join(texts)}]


def image_bytes(url, i: int) -> bytes:
    """An image sent as a data URL (pi sends images so), as bytes."""
    head, _, data = (url or "").partition(",")
    if not (head.startswith("data:image/") and head.endswith(";base64")):
        raise BadRequest(
            f"messages[{i}]: an image must be a base64 data URL (data:image/…;base64,…)"
        )
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        raise BadRequest(f"messages[{i}]: the image's base64 does not decode") from None


class Images:
    """The images of the conversation pi sends, each checked and decoded once (media.py, the same
    checks as an attachment) and kept in a private folder the sandbox never sees, so every step's
    prompt encodes it as SimpleHarness encodes an attached one. The folder goes with the endpoint."""

    def __init__(self):
        self.folder = cleanup.temp_folder("agentloop-media")
        self._parts: dict[str, dict] = {}  # sha256 of the bytes -> the media part

    def part(self, data: bytes) -> dict:
        key = hashlib.sha256(data).hexdigest()
        if key not in self._parts:
            try:
                checked = media.check(data, f"image-{key[:12]}.bin")
            except media.MediaError as e:
                raise BadRequest(f"an image pi sent cannot be read: {e.en}") from None
            if checked.kind != "image":
                raise BadRequest(f"an image pi sent is {checked.kind}, not an image")
            self._parts[key] = media.keep(checked, self.folder, f"image-{key[:12]}").part()
        return self._parts[key]

    def close(self) -> None:
        cleanup.remove_tree(self.folder)


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


# -- serving: the ASGI app, the stream from the worker thread, the guarded protocol
# -------------------------------------------------------------------------------------------


def app_for(endpoint: ModelEndpoint):
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            check_head(request, endpoint)  # before a byte of the body is read
            completion = checked_completion(await bounded_body(request), endpoint)
        except BadRequest as e:  # refused before a header of the stream goes
            return await error(e.status, str(e))(scope, receive, send)
        except ClientDisconnect:  # gone before its body was whole: no one to answer
            return
        await stream(endpoint, completion, scope, receive, send)

    return app


def check_head(request: Request, endpoint: ModelEndpoint) -> None:
    """Refuse, from its head alone, a request that is not pi's, not for this endpoint, or with a
    body too large to take: a caller without the key gets no byte of its body read."""
    headers = request.headers
    if "origin" in headers:
        raise BadRequest("this endpoint serves pi only, not web pages", 403)
    if not endpoint.authorized(headers.get("authorization")):
        raise BadRequest("missing or wrong API key: only the pi agentloop started may call", 401)
    if request.url.path.rstrip("/") != PATH:
        raise BadRequest(f"no endpoint {request.url.path}; there is {PATH}", 404)
    if request.method != "POST":
        raise BadRequest(f"{PATH} takes POST, not {request.method}", 405)
    length = headers.get("content-length", "")
    if not length.isdecimal() or int(length) < 1:
        raise BadRequest(f"the body must be JSON of 1 to {MAX_BODY} bytes, with its Content-Length")
    if int(length) > MAX_BODY:
        raise BadRequest(f"the body is {length} bytes; at most {MAX_BODY} are read", 413)


async def bounded_body(request: Request) -> bytes:
    """The body, never more than MAX_BODY of it: h11 holds a body to its Content-Length, except one
    also sent chunked, whose chunks it reads whatever the Content-Length said."""
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY:
            raise BadRequest(f"the body is over {MAX_BODY} bytes", 413)
    return bytes(body)


def checked_completion(body: bytes, endpoint: ModelEndpoint) -> dict:
    """The request, if the endpoint can serve it: what complete() would refuse, refused here with a
    400 while one can still be sent."""
    try:
        request = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    if not isinstance(request, dict):
        raise BadRequest("the body must be a JSON object")
    if request.get("stream") is not True:
        raise BadRequest("only streamed completions are served: set `stream` to true")
    conversation_from(request, endpoint.llm.family.thinking_key)
    sampling_for(request, endpoint.settings)
    return request


def error(status: int, message: str) -> Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
    return JSONResponse(body, status, headers={"Connection": "close"})


async def stream(endpoint: ModelEndpoint, request: dict, scope: Scope, receive, send) -> None:
    """The completion as server-sent events. Starlette ends the response when the client
    disconnects; from then on `send` returns False, so generation ends before its next token."""
    chunks = Chunks()
    response = StreamingResponse(
        chunks.lines(lambda: endpoint.complete_into(request, chunks)), headers=STREAM_HEADERS
    )
    try:
        await response(scope, receive, send)
    finally:
        chunks.gone.set()


class Chunks:
    """One completion's chunks, from the worker thread that generates them to the event loop that
    writes them. send() is complete()'s `send`: called once per token, and False once the client
    has gone."""

    def __init__(self):
        self._loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.gone = threading.Event()

    def send(self, chunk: dict | None) -> bool:
        # A keep-alive comment goes for a token pi sees no text of: every token asks if pi is there.
        line = b": token\n\n" if chunk is None else b"data: " + json.dumps(chunk).encode() + b"\n\n"
        return not self.gone.is_set() and self._put(line)

    def end(self) -> None:
        self._put(None)

    def _put(self, line: bytes | None) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)
        except RuntimeError:  # the loop has closed: close() stopped waiting for this stream
            return False
        return True

    async def lines(self, generate: Callable[[], None]) -> AsyncIterator[bytes]:
        """The lines as `generate` sends them from its worker thread, started at the first: a
        response never begun (its client left first) generates nothing."""
        threading.Thread(target=generate, name="model-endpoint-generation", daemon=True).start()
        while (line := await self._lines.get()) is not None:
            yield line
        yield b"data: [DONE]\n\n"


def server_config(
    endpoint: ModelEndpoint, request_s: float, max_connections: int
) -> uvicorn.Config:
    return uvicorn.Config(
        app_for(endpoint),
        http=guarded_http.protocol(request_s, max_connections),
        loop="asyncio",
        ws="none",
        lifespan="off",
        log_config=None,  # uvicorn's default would configure the whole process's logging
        proxy_headers=False,  # no proxy in front: the peer is who connected
        server_header=False,
        # asyncio accepts up to `backlog` connections per wake-up before any of them is counted, so
        # this bounds how far past max_connections the open sockets can run for a moment.
        backlog=max_connections,
        timeout_graceful_shutdown=SHUTDOWN_S,
    )


def loopback_socket() -> socket.socket:
    """A listening socket on 127.0.0.1, on a port the OS picks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock
