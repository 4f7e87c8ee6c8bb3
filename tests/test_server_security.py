"""The demo server runs model-written code, so a page from elsewhere must not drive it: Host, Origin, the per-start
token, body limits, security headers, the bind warning; and the built book still works under its CSP."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import threading
import time
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from agentloop.paths import ROOT
from demo_server.app import create_app
from demo_server.client import Client, ServerThread, free_port
from demo_server.guard import bind_warning
from tests.conftest import TINY, demo_server

INLINE = "document.documentElement.dataset.inline = 'ran';"
PAGE = f"""<!doctype html><html><head><meta charset="utf-8"><title>Test book</title>
<script>{INLINE}</script><script id="__config" type="application/json">{{"a": 1}}</script></head>
<body><h1>Test book</h1></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    (site / "index.html").write_text(PAGE)
    (site / "chapters" / "one").mkdir(parents=True)
    (site / "chapters" / "one" / "index.html").write_text(PAGE.replace("Test book", "Chapter one"))
    (site / "404.html").write_text(PAGE.replace("Test book", "Not here"))
    (site / "assets").mkdir()
    (site / "assets" / "panel.js").write_text("// the panel")
    (site.parent / "secret.txt").write_text("outside the site")
    return site


@pytest.fixture(scope="module")
def server(site):
    with demo_server(site, model="tiny-nothing") as srv:  # no model: these tests need none
        yield srv


@pytest.fixture
def c(server):
    client = Client(server.url)
    yield client
    client.close()


def token_of(c: Client) -> dict:
    return {"X-Agentloop-Token": c.token}


# -- Host and Origin ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1:1",
        "localhost",
        "127.0.0.1.evil.example:{port}",
        "",
    ],
)
def test_a_foreign_host_is_refused_even_for_pages(server, c, host):
    host = host.format(port=server.port)
    for method, path in (("GET", "/"), ("GET", "/api/status"), ("POST", "/api/runs")):
        r = c.http.request(
            method, path, headers={"Host": host, **token_of(c)}, json={"question": "hi"}
        )
        assert r.status_code == 403, (host, path)
        assert c.token not in r.text  # a rebinding page cannot read the token either
        assert r.json()["type"] == "error" and r.json()["message"]["zh"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"]
)
def test_the_own_host_names_are_served(server, c, host):
    r = c.get("/", headers={"Host": host.format(port=server.port)})
    assert r.status_code == 200 and c.token in r.text


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://127.0.0.1:1",
        "https://127.0.0.1:{port}",
        "http://localhost:{port}",
        "null",
    ],
)
def test_a_cross_origin_request_is_refused(server, c, origin):
    origin = origin.format(port=server.port)
    r = c.post("/api/runs", {"question": "hi"}, headers={"Origin": origin})
    assert r.status_code == 403 and "origin" in r.json()["message"]["en"]
    r = c.http.options(
        "/api/runs", headers={"Origin": origin, "Access-Control-Request-Method": "POST"}
    )
    assert r.status_code == 403
    assert not any(h.lower().startswith("access-control-") for h in r.headers)


def test_the_same_origin_passes_and_no_cors_headers_are_sent(server, c):
    r = c.post("/api/runs", {"question": "hi"}, headers={"Origin": server.url})
    assert r.status_code == 409  # past every check: there is just no model
    for path in ("/", "/api/status"):
        assert not any(h.lower().startswith("access-control-") for h in c.get(path).headers)


def test_a_browser_request_from_another_site_is_refused(c):
    assert c.get("/api/status", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert c.get("/api/status", headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
    assert c.get("/api/status", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    # Following a link to the book from elsewhere is fine: pages are not API calls.
    assert c.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200


# -- the token, the body --------------------------------------------------------------------------------------------


def test_every_post_needs_the_token(server, c):
    paths = [p for p, ops in c.get("/api/openapi.json").json()["paths"].items() if "post" in ops]
    assert len(paths) == 9  # media_expand (chapter 7) the eighth, next_stage (the pace) the ninth
    for path in paths:
        path = path.replace("{run_id}", "000000000000")
        missing = c.http.post(path, json={})
        assert (
            missing.status_code == 401 and "X-Agentloop-Token" in missing.json()["message"]["en"]
        ), path
        wrong = c.http.post(path, json={}, headers={"X-Agentloop-Token": c.token[:-1] + "x"})
        assert wrong.status_code == 403, path
        assert c.http.post(path, json={}, headers={"X-Agentloop-Token": ""}).status_code == 401
        assert c.http.post(path, json={}, headers=token_of(c)).status_code not in (401, 403), path


def test_the_token_is_per_start(site):
    tokens = set()
    for _ in range(2):
        app = create_app(model="tiny-nothing", site_dir=site, port=1)
        tokens.add(app.state.token)
        assert len(app.state.token) >= 40
    assert len(tokens) == 2


def test_bodies_are_capped_and_json(c):
    # A run's body may carry its attachments (guard.LARGE_BODIES; tests/test_media_server.py): not capped here.
    big = {"text": "x" * (70 * 1024)}
    r = c.post("/api/tokenize", big)
    assert r.status_code == 413 and r.json()["message"]["en"]

    def chunks():  # no Content-Length: counted as it comes
        for _ in range(80):
            yield b"x" * 1024

    r = c.http.post(
        "/api/tokenize",
        content=chunks(),
        headers={**token_of(c), "Content-Type": "application/json"},
    )
    assert r.status_code == 413
    # What a plain HTML form can send is not JSON, token or not.
    r = c.http.post(
        "/api/runs",
        content=b"question=hi",
        headers={**token_of(c), "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 415
    assert c.http.post("/api/runs", data={"question": "hi"}).status_code == 401
    # A body nested past any sense is a 4xx, not a crash.
    r = c.http.post(
        "/api/tokenize",
        content=b"[" * 60000,
        headers={**token_of(c), "Content-Type": "application/json"},
    )
    assert 400 <= r.status_code < 500


# -- the pages -----------------------------------------------------------------------------------------------------


def test_pages_carry_the_token_and_a_strict_csp(c):
    r = c.get("/")
    assert r.status_code == 200
    assert re.search(
        r'<head><meta name="agentloop-token" content="[^"]+"><meta name="agentloop-api" '
        r'content="[^"]+"><meta charset',
        r.text,
    )
    csp = r.headers["content-security-policy"]
    digest = base64.b64encode(hashlib.sha256(INLINE.encode()).digest()).decode()
    assert (
        "script-src 'self' " in csp
        and f"'sha256-{digest}'" in csp
        and "'unsafe-inline'" not in csp.split(";")[1]
    )
    assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp
    for name, value in {
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "cache-control": "no-store",
        "cross-origin-resource-policy": "same-origin",
    }.items():
        assert r.headers[name] == value
    api = c.get("/api/status")
    assert (
        api.headers["x-content-type-options"] == "nosniff"
        and api.headers["cache-control"] == "no-store"
    )
    assert c.get("/assets/panel.js").headers["x-content-type-options"] == "nosniff"


def test_the_browser_tests_wait_on_functions_not_strings():
    """The CSP above has no 'unsafe-eval'. Playwright's wait_for_function evals a string expression on every poll
    after the first, so a wait that is not true at once fails under the CSP (CI's slower run did); a function
    source is evaled once, by the debugger, and then called."""
    string_waits = [
        f"{path.name}:{text[: m.start()].count(chr(10)) + 1}"
        for path in sorted(Path(__file__).parent.glob("test_*.py"))
        for text in [path.read_text()]
        for m in re.finditer(
            r"wait_for_function\(\s*(?:#[^\n]*\n\s*)?[\"']((?:(?!=>)[^\"'])*)[\"']", text
        )
        if not m.group(1).startswith("function")
    ]
    assert not string_waits, string_waits


def test_paths_stay_inside_the_site(c):
    r = c.get("/chapters/one", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == "one/"
    assert "Chapter one" in c.get("/chapters/one/").text
    missing = c.get("/chapters/none/")
    assert missing.status_code == 404 and "Not here" in missing.text and c.token in missing.text
    for path in (
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/assets/..%2f..%2fsecret.txt",
        "/%00",
        "/a%5c..%5csecret.txt",
    ):
        r = c.get(path)
        assert r.status_code == 404 and "outside the site" not in r.text, path
    assert c.get("/api/../secret.txt").status_code == 404


def test_without_a_built_book_a_page_says_how_to_build_it(tmp_path):
    port = free_port()
    srv = ServerThread(
        create_app(model="tiny-nothing", site_dir=tmp_path / "site", port=port), port
    ).start()
    try:
        c = Client(srv.url)
        page = c.get("/")
        assert page.status_code == 200 and "make serve" in page.text and c.token
        assert c.get("/chapters/x/").status_code == 404
    finally:
        srv.stop()


# -- binding ---------------------------------------------------------------------------------------------------------


def test_only_loopback_binds_are_quiet():
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        assert bind_warning(host) is None, host
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com"):
        assert "WARNING" in bind_warning(host), host


def test_serving_on_all_interfaces_warns_loudly(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentloop",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
            "--model",
            "tiny-nothing",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/status", timeout=1)
                break
            except httpx.HTTPError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        assert r.status_code == 200  # loopback Host names still work (a port forward)
        foreign = httpx.get(
            f"http://127.0.0.1:{port}/api/status", headers={"Host": f"192.0.2.7:{port}"}, timeout=5
        )
        assert foreign.status_code == 403
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert "WARNING" in err and "0.0.0.0" in err


# -- in a browser ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def book(built_book):
    """The real book (the run's one build, which these tests only read), served with the tiny model."""
    with demo_server(built_book, model=str(TINY["qwen3_5"]), device="cpu") as srv:
        yield srv


def test_the_book_works_under_its_csp_and_a_panel_runs_live(book, browser):
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    chapter = next(p for p in sorted((ROOT / "docs" / "chapters").glob("01-*.md")))
    page.goto(f"{book.url}/chapters/{chapter.stem}/")
    panel = page.locator(".agentloop-panel").first
    panel.locator("button.al-run").wait_for(timeout=15000)  # live: the server answered /api/status
    assert "tiny-qwen3_5" in panel.inner_text()
    assert (
        page.locator(".mermaid").count() == 0
        or page.locator(".mermaid").first.bounding_box()["height"] > 20
    )
    panel.locator("textarea").fill("Say hi.")
    panel.locator(".al-form-settings > summary").click()  # the settings are folded to one line
    panel.locator("input[name=max_new_tokens]").fill("6")
    panel.locator("input[name=max_steps]").fill("1")
    panel.locator("input[name=use_tools]").uncheck()
    panel.locator("button.al-run").click()
    panel.get_by_text("Run ended").wait_for(
        timeout=30000
    )  # the live run's events, drawn (not a replay)
    assert "Step 1" in panel.inner_text()
    # Material's instant navigation still works, with its inline scripts allowed by hash.
    page.locator("a[href*='02-']").first.click()
    page.wait_for_url("**/chapters/02-*/", timeout=10000)
    assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
    assert not problems, problems
    page.close()


def test_a_page_on_another_site_cannot_start_a_run(book, browser, tmp_path):
    """A hostile page at another origin (here: another port) tries what a browser lets it try."""
    target = book.url
    (tmp_path / "evil.html").write_text(f"""<!doctype html><title>evil</title>
<form id="f" method="post" action="{target}/api/runs" enctype="text/plain">
<input name='{{"question": "hi", "x": "' value='"}}'></form>
<script>
window.results = [];
const body = JSON.stringify({{question: "hi"}});
fetch("{target}/api/runs", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}})
  .then(r => results.push("no-cors:" + r.type), e => results.push("no-cors failed"));
fetch("{target}/api/runs", {{method: "POST", headers: {{"Content-Type": "application/json"}}, body}})
  .then(r => results.push("cors:" + r.status), e => results.push("cors blocked"));
fetch("{target}/").then(r => r.text()).then(t => results.push("read:" + t.length), e => results.push("read blocked"));
</script>""")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(tmp_path), **k)

        def log_message(self, *a):
            pass

    runs_before = len(book.app.state.current.runs)
    evil = HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        page.goto(f"http://localhost:{evil.server_port}/evil.html")
        deadline = time.monotonic() + 10
        while len(results := page.evaluate("window.results")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "cors blocked" in results and "read blocked" in results, results
        with (
            page.expect_navigation() as navigation
        ):  # a form post: the one request no browser check stops
            page.evaluate("document.getElementById('f').submit()")
        assert (
            navigation.value.status == 403 and "run_id" not in page.content()
        )  # its Origin is foreign
        page.close()
    finally:
        evil.shutdown()
    assert len(book.app.state.current.runs) == runs_before  # nothing started
