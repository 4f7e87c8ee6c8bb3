"""A stand-in for the demo server in browser tests: the built book's pages with the two meta tags the real server
puts in them (the token, and the table of API routes the panels read every path from), and what a test needs to
answer the API routes it plays (docs/assets/README-panel.md). It leaves out everything else the server does:
the Content-Security-Policy, the host and token checks (a test checks the token it receives itself)."""

from __future__ import annotations

import html
import http.server
import json
import os
import threading
from pathlib import Path

TOKEN = "test-token-123"

# The routes it stands in for, as the real server names them (endpoint function: [method, path template]);
# test_model_menu checks each against the real server's own routes.
ROUTES = {
    "status": ["GET", "/api/status"],
    "models": ["GET", "/api/models"],
    "load": ["POST", "/api/models/load"],
    "load_events": ["GET", "/api/models/load/events"],
    "start_run": ["POST", "/api/runs"],
    "run_events": ["GET", "/api/runs/{run_id}/events"],
    "decision": ["POST", "/api/runs/{run_id}/decision"],
    "stop": ["POST", "/api/runs/{run_id}/stop"],
}


def page_metas(token: str = TOKEN, routes: dict | None = None) -> str:
    """The two meta tags of a live page: the token, and the route table as HTML-attribute-escaped JSON."""
    table = html.escape(json.dumps(ROUTES if routes is None else routes), quote=True)
    return f'<meta name="agentloop-token" content="{token}"><meta name="agentloop-api" content="{table}">'


class StandIn(http.server.SimpleHTTPRequestHandler):
    """Subclasses set `site` and answer the API in `api_get()` (True when they did) and `do_POST()`."""

    site: Path

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(self.site), **kwargs)

    def log_message(self, *args):
        pass

    def api_get(self) -> bool:
        return False

    def do_GET(self):
        if not self.api_get() and not self.send_page():
            super().do_GET()

    def send_page(self) -> bool:
        """An HTML page of the book, with the two meta tags, as the real server serves it."""
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if not (path.endswith(".html") and os.path.isfile(path)):
            return False
        html = (
            Path(path)
            .read_text(encoding="utf-8")
            .replace("<head>", f"<head>{page_metas()}", 1)
            .encode()
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(html)))
        self.end_headers()
        self.wfile.write(html)
        return True

    def body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

    def send_json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def event(self, ev: dict) -> None:
        self.wfile.write(f"data: {json.dumps(ev)}\n\n".encode())
        self.wfile.flush()


def serve(handler: type[StandIn], port: int = 0) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
