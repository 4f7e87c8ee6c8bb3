"""The built book (`mkdocs build` writes site/), served on the API's own origin, so its panels can run live.

Every HTML page gets the per-start token as `<meta name="agentloop-token">`, which the panels send back on
each POST, the API table as `<meta name="agentloop-api">` (api_table: the panels call no path they were not
given, and a page without it is the static book, which replays only), and a Content-Security-Policy that allows only this origin. mkdocs-material writes a few small inline
scripts (the palette, the tabs, its config); the policy allows exactly those by their SHA-256 hashes, taken
from every page of the site, so Material's instant navigation can run any page's scripts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from html import escape
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute

INLINE_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.S | re.I)
HEAD = re.compile(r"<head\b[^>]*>", re.I)
# style-src allows inline styles: Material and mermaid set style attributes and write <style> elements.
# blob: images and media are the reader's own files, previewed by the attach control (attach.js) from URLs
# the page itself made.
CSP = (
    "default-src 'self'; script-src 'self'{hashes}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; media-src 'self' blob:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)

MISSING = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentloop: the book is not built</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto; line-height: 1.5">
<h1>The book is not built yet</h1>
<p>The demo server is running and its API answers at <code>/api/status</code>, but there is no built book in
<code>{site}</code>. Run <code>make serve</code>, which builds the book and then starts this server.</p>
<p lang="zh-Hant">本書尚未建置。請執行 <code>make serve</code>：它會先建置本書，再啟動這個伺服器。</p>
</body></html>
"""


def script_hashes(html: str) -> set[str]:
    """The CSP sources for the page's inline scripts: 'sha256-…' of each one's exact text."""
    hashes = set()
    for m in INLINE_SCRIPT.finditer(html):
        if re.search(r"\bsrc\s*=", m.group(1), re.I):
            continue
        digest = base64.b64encode(hashlib.sha256(m.group(2).encode()).digest()).decode()
        hashes.add(f"'sha256-{digest}'")
    return hashes


def api_table(app: FastAPI) -> dict[str, list[str]]:
    """{route_name: [METHOD, path_template]} for every API route under /api, from the app's own routes: the
    name is the endpoint function's, the path as FastAPI writes it (`/api/runs/{run_id}/events`)."""
    table = {}
    for route in app.routes:
        if isinstance(route, APIRoute) and route.path.startswith("/api/"):
            table[route.name] = [sorted(route.methods)[0], route.path]
    return table


class Book:
    def __init__(self, site_dir: str | Path, token: str, api: dict[str, list[str]]):
        self.site = Path(site_dir).resolve()
        self.meta = (
            f'<meta name="agentloop-token" content="{token}">'
            f'<meta name="agentloop-api" content="{escape(json.dumps(api), quote=True)}">'
        )
        self._pages: dict[Path, tuple[tuple[int, int], bytes, set[str]]] = {}
        self._site_hashes: set[str] | None = None
        self._lock = threading.Lock()

    def response(self, path: str) -> Response:
        if not self.site.is_dir():
            return self.html(
                self.with_meta(MISSING.format(site=self.site)),
                set(),
                200 if path in ("", "index.html") else 404,
            )
        target = self.find(path)
        if target is None:
            missing = self.site / "404.html"
            if missing.is_file():
                body, hashes = self.page(missing)
                return self.html(body, hashes, 404)
            return self.html(
                self.with_meta(
                    "<!doctype html><head><title>Not found</title></head><h1>Not found</h1>"
                ),
                set(),
                404,
            )
        if (
            target.is_dir()
        ):  # a chapter's folder: its URL ends with "/", so relative links resolve inside it
            return RedirectResponse(quote(path.rsplit("/", 1)[-1]) + "/", status_code=307)
        if target.suffix == ".html":
            body, hashes = self.page(target)
            return self.html(body, hashes, 200)
        return FileResponse(target)

    def find(self, path: str) -> Path | None:
        """The file (or folder needing a trailing slash) for a URL path inside site/; None if there is none."""
        if "\x00" in path or "\\" in path:
            return None
        target = (self.site / path).resolve()
        if not target.is_relative_to(self.site):
            return None
        if target.is_dir():
            index = target / "index.html"
            if not index.is_file():
                return None
            return index if path == "" or path.endswith("/") else target
        return target if target.is_file() else None

    def page(self, file: Path) -> tuple[bytes, set[str]]:
        """The page with the token's meta tag after <head>, and its inline scripts' hashes (cached per file)."""
        stat = file.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._pages.get(file)
        if cached and cached[0] == key:
            return cached[1], cached[2]
        html = file.read_text(encoding="utf-8", errors="replace")
        body, hashes = self.with_meta(html), script_hashes(html)
        with self._lock:
            self._pages[file] = (key, body, hashes)
        return body, hashes

    def html(self, body: bytes, hashes: set[str], status: int) -> HTMLResponse:
        csp = CSP.format(hashes="".join(" " + h for h in sorted(hashes | self.site_hashes(hashes))))
        return HTMLResponse(
            body,
            status_code=status,
            headers={"Content-Security-Policy": csp, "Cache-Control": "no-store"},
        )

    def with_meta(self, html: str) -> bytes:
        m = HEAD.search(html)
        return (html[: m.end()] + self.meta + html[m.end() :] if m else self.meta + html).encode()

    def site_hashes(self, page_hashes: set[str]) -> set[str]:
        """Every page's inline-script hashes, gathered once (again when a page has one not seen: a rebuild)."""
        with self._lock:
            if self._site_hashes is not None and page_hashes <= self._site_hashes:
                return self._site_hashes
        hashes = set(page_hashes)
        if self.site.is_dir():
            for file in self.site.rglob("*.html"):
                try:
                    hashes |= script_hashes(file.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
        with self._lock:
            self._site_hashes = hashes
        return hashes
