"""What keeps a web page from elsewhere from driving the demo server, which runs model-written code.

Every request passes these checks, in this order, before the app sees it:

1. Host must be this server's own address (127.0.0.1, localhost or [::1], with its port): a page on another
   site whose name is made to resolve to 127.0.0.1 (DNS rebinding) sends its own name as Host and is refused.
2. An Origin header, when there is one, must be this same origin; and an /api/ request a browser marks as coming
   from another site (Sec-Fetch-Site) is refused. No CORS header is ever sent, so other origins read nothing.
3. Every state-changing request (anything but GET and HEAD) carries the per-start token in X-Agentloop-Token,
   compared in constant time. The token is only ever in the HTML pages the server serves (a meta tag), which
   another origin cannot read.
4. A body is at most `max_body` bytes, and a POST to /api/ is JSON (a plain HTML form cannot send that).
5. A larger body, which only the paths that take attachments accept (LARGE_BODIES), is read and handled one at
   a time: another is refused at once (503), by its Content-Length or as soon as its bytes pass `max_body`, and
   never waits in memory. A run is refused while the model is busy (409) before its large body is read, so a
   refused upload costs nothing.

Every answer gets headers that keep it from being sniffed, framed or embedded by another origin.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response

from agentloop import media
from demo_server.errors import error_response

TOKEN_HEADER = "X-Agentloop-Token"
SAFE_METHODS = ("GET", "HEAD")
MAX_BODY = 64 * 1024
# A run's body carries its attachments (base64, 4 bytes for each 3): media.MAX_BYTES in all, and the question.
ATTACHMENTS_BODY = media.MAX_BYTES * 4 // 3 + MAX_BODY
LARGE_BODIES = {"/api/runs": ATTACHMENTS_BODY, "/api/media/expand": ATTACHMENTS_BODY}
# Large bodies read and handled at once. One costs four or five times its size before it is saved (the body, its
# JSON text, the decoded bytes, the decoded media): four 84 MB uploads at once took the server from 566 to
# 2,136 MiB. One at a time bounds that to what one costs: the same four, one read, peaked at 970 MiB.
LARGE_AT_ONCE = 1
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
API_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}


def too_big(limit: int):
    return error_response(
        413,
        f"Refused: the body is larger than {limit} bytes.",
        f"拒絕：請求內容超過 {limit} 位元組。",
    )


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_warning(host: str) -> str | None:
    """The warning to print when the server is bound where other machines can reach it; None on loopback."""
    if is_loopback(host):
        return None
    return (
        f"WARNING: the demo server is bound to {host}, so other machines can reach it. It runs code the model "
        f"writes (in a sandbox, after approval). Requests are still only accepted for the Host names "
        f"127.0.0.1, localhost and [::1] (a port forward, as from a container, works). Use --host 127.0.0.1 "
        f"unless you mean it."
    )


def allowed_hosts(host: str, port: int | None) -> set[str] | None:
    """The Host header values this server answers; None when the port is not known (any port on loopback)."""
    if port is None:
        return None
    names = set(LOOPBACK_NAMES)
    bind = host.strip("[]")
    if bind and bind not in ("0.0.0.0", "::") and bind.lower() != "localhost":
        names.add(f"[{bind}]" if ":" in bind else bind.lower())
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:
        hosts |= names
    return hosts


class Guard:
    """ASGI middleware: the checks above, and the security headers on every answer."""

    def __init__(
        self,
        app,
        token: str,
        hosts: set[str] | None,
        max_body: int = MAX_BODY,
        refuse_run: Callable[[], Response | None] = lambda: None,
    ):
        self.app = app
        self.token = token.encode()
        self.hosts = hosts
        self.max_body = max_body
        self.refuse_run = refuse_run  # the answer a run would get now (the model is busy), or None
        self.large = 0  # large bodies being read or handled (the event loop's alone: no lock)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        refusal, large = self.check(scope, headers), False
        if refusal is None and scope["method"] not in SAFE_METHODS:
            refusal, receive, large = await self.read_body(scope, headers, receive)
        try:
            if refusal is not None:
                return await refusal(scope, receive, self.with_headers(send, scope))
            await self.app(scope, receive, self.with_headers(send, scope))
        finally:
            if large:  # held until the app has answered: what it made of the body is gone by then
                self.large -= 1

    def check(self, scope, headers: Headers):
        host = headers.get("host", "").lower()
        if not self.host_ok(host):
            return error_response(
                403,
                f"Refused: this server answers only for its own address, not Host {host!r}.",
                f"拒絕：這個伺服器只回應它自己的位址，不回應 Host {host!r}。",
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host}":
            return error_response(
                403,
                f"Refused: a request from another origin ({origin}).",
                f"拒絕：來自其他來源（{origin}）的請求。",
            )
        api = scope["path"].startswith("/api/")
        if api and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return error_response(
                403,
                "Refused: a request a browser sent from another site.",
                "拒絕：瀏覽器從其他網站送出的請求。",
            )
        if scope["method"] not in SAFE_METHODS:
            given = headers.get(TOKEN_HEADER.lower())
            if not given:
                return error_response(
                    401,
                    f"Refused: the {TOKEN_HEADER} header is missing. Open the book from this "
                    f"server's own address; its pages carry the token.",
                    f"拒絕：缺少 {TOKEN_HEADER} 標頭。請從這個伺服器自己的位址開啟本書，頁面中帶有權杖。",
                )
            if not hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self.token):
                return error_response(
                    403,
                    f"Refused: the {TOKEN_HEADER} is wrong (the server has restarted? "
                    f"reload the page).",
                    f"拒絕：{TOKEN_HEADER} 不正確（伺服器重新啟動了嗎？請重新載入頁面）。",
                )
            content_type = headers.get("content-type", "").split(";")[0].strip().lower()
            if api and content_type != "application/json":
                return error_response(
                    415,
                    "Refused: the body must be JSON (Content-Type: application/json).",
                    "拒絕：請求內容必須是 JSON（Content-Type: application/json）。",
                )
        return None

    def host_ok(self, host: str) -> bool:
        if self.hosts is not None:
            return host in self.hosts
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name in LOOPBACK_NAMES

    async def read_body(self, scope, headers: Headers, receive):
        """The whole body, read before the app starts, then handed to it again: (refusal, receive, large). At most
        the path's limit; past `max_body` only with room for one more large body (`take_large`)."""
        limit = max(self.max_body, LARGE_BODIES.get(scope["path"], 0))
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return too_big(limit), receive, False
        large = False
        if length is not None and int(length) > self.max_body:
            if (refusal := self.take_large(scope)) is not None:
                return refusal, receive, False
            large = True
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return None, receive, large
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return too_big(limit), receive, large
            if size > self.max_body and not large:  # no Content-Length: known large only now
                if (refusal := self.take_large(scope)) is not None:
                    return refusal, receive, False
                large = True
            if not message.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replay():
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return None, replay, large

    def take_large(self, scope):
        """Room for one more large body, or the answer that refuses it before it is read: the run's own refusal
        (409: the model is busy), or 503 while LARGE_AT_ONCE others are read or handled."""
        if scope["path"] == "/api/runs" and (refusal := self.refuse_run()) is not None:
            return refusal
        if self.large >= LARGE_AT_ONCE:
            return error_response(
                503,
                "Refused: another large upload is being read or checked (one at a time). Send it again "
                "when that one is done.",
                "拒絕：另一個大型上傳正在讀取或檢查中（一次一個）。請等它完成後再送一次。",
                headers={"Retry-After": "2"},
            )
        self.large += 1
        return None

    def with_headers(self, send, scope):
        api = scope["path"].startswith("/api/")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in {**SECURITY_HEADERS, **(API_HEADERS if api else {})}.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        return send_with_headers
