"""HTTP to a vLLM server: the two token endpoints' paths, a GET or POST answered in JSON, a streamed
POST read as Server-Sent Events, and the server's failures said plainly in both languages
(ServerError).

Only http.client and json, so starting or waiting for a server (local.py, docker.py) costs no
tokenizer. Left out: retries (a server that does not answer is said so at once) and keeping
connections open between requests (one connection per request; a stream's closes when its `with` is left)."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator

GENERATE = "/inference/v1/generate"
COMPLETIONS = "/v1/completions"


class ServerError(RuntimeError):
    """The server failed or refused: `en` and `zh` say what happened, for the `error` event."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh


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
    """A connection to the server at `url` (http or https), not yet opened."""
    parts = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    return cls(parts.hostname, parts.port, timeout=timeout_s)


def get_json(url: str, path: str, timeout_s: float = 10.0) -> dict:
    """GET `path` and its JSON; ServerError when nothing answers or the answer is not 200."""
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
    """POST `body` as JSON to `path`: the status and the answer's text, whatever the status (the
    caller decides what a refusal means)."""
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
    """No server answers at `url`: the error, with what the socket said."""
    return ServerError(
        f"No vLLM server answers at {url} ({type(e).__name__}: {e}).",
        f"{url} 沒有 vLLM 伺服器回應（{type(e).__name__}: {e}）。",
    )


def refused(url: str, path: str, status: int, body: str) -> ServerError:
    """The server answered `path` with `status`: the error, with vLLM's own message when it sent one."""
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body[:300]
    return ServerError(
        f"The vLLM server at {url} refused {path} ({status}): {message}",
        f"{url} 的 vLLM 伺服器拒絕了 {path}（{status}）：{message}",
    )
