"""A small client of the demo server, doing what a panel does: the token from a served page, POSTs that carry it,
and a run's events read from its stream. The tests and the book's recording script use it (it needs httpx)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator

TOKEN_META = re.compile(r'<meta name="agentloop-token" content="([^"]+)">')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:`port` in a daemon thread, for tests and scripts; stop() ends it."""

    def __init__(self, app, port: int):
        import uvicorn

        from demo_server.server import uvicorn_config

        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port))
        self.thread = threading.Thread(target=self.server.run, name="demo-server", daemon=True)

    def start(self, timeout: float = 30) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the demo server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class Client:
    def __init__(self, url: str, timeout: float = 60):
        import httpx

        self.url = url
        self.http = httpx.Client(base_url=url, timeout=timeout)
        page = self.http.get("/")
        m = TOKEN_META.search(page.text)
        self.token = m.group(1) if m else None

    def get(self, path: str, **kwargs):
        return self.http.get(path, **kwargs)

    def post(self, path: str, body: dict | None = None, **kwargs):
        headers = {"X-Agentloop-Token": self.token} if self.token else {}
        headers.update(kwargs.pop("headers", {}))
        return self.http.post(
            path, json=body if body is not None else {}, headers=headers, **kwargs
        )

    def status(self) -> dict:
        return self.get("/api/status").json()

    def wait_ready(self, timeout: float = 60) -> dict:
        """The status once no load is under way."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.status()
            if not status["loading"]:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError("the model is still loading")
            time.sleep(0.05)

    def start_run(
        self,
        question: str,
        settings: dict | None = None,
        forced: list[str] | None = None,
        attachments: list[dict] | None = None,
    ) -> str:
        body = {"question": question, "settings": settings or {}}
        if forced is not None:
            body["forced"] = forced
        if attachments:  # [{name, data (base64)}]
            body["attachments"] = attachments
        r = self.post("/api/runs", body)
        if r.status_code != 200:
            raise RuntimeError(f"POST /api/runs: {r.status_code} {r.text}")
        return r.json()["run_id"]

    def stream(self, path: str) -> Iterator[str]:
        """The raw SSE messages of an event stream, as the server wrote them, until it ends."""
        with self.http.stream("GET", path) as response:
            response.raise_for_status()
            buffer = ""
            for chunk in response.iter_text():
                buffer += chunk
                while "\n\n" in buffer:
                    message, buffer = buffer.split("\n\n", 1)
                    yield message + "\n\n"

    def events(self, path: str) -> Iterator[dict]:
        """The events of a stream (keep-alive comments skipped)."""
        for message in self.stream(path):
            if message.startswith("data: "):
                yield json.loads(message[len("data: ") :])

    def run_events(self, run_id: str) -> Iterator[dict]:
        return self.events(f"/api/runs/{run_id}/events")

    def close(self) -> None:
        self.http.close()
