"""`agentloop serve`: the demo server under uvicorn, on 127.0.0.1 unless told otherwise (and then loudly)."""

from __future__ import annotations

import sys

from agentloop import guarded_http
from agentloop.paths import ROOT
from demo_server.guard import bind_warning

# A browser opens six connections to a server at most, and a run's event stream holds one for its
# length: 64 leave room for many tabs. A whole request (an attachment's upload included, on loopback)
# comes in well under REQUEST_S. Past either, guarded_http cuts off who holds a connection without
# asking for anything, before anyone being answered.
MAX_CONNECTIONS = 64
REQUEST_S = 30.0


def uvicorn_config(app, host: str, port: int, **options):
    """The demo server's uvicorn settings, for `agentloop serve` and for the tests' ServerThread."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=2,
        http=guarded_http.protocol(REQUEST_S, MAX_CONNECTIONS),
        backlog=MAX_CONNECTIONS,
        **options,
    )


def serve(
    host: str = "127.0.0.1", port: int = 8000, model: str | None = None, site_dir=None
) -> int:
    import uvicorn

    from demo_server.app import create_app

    warning = bind_warning(host)
    if warning:
        print(
            "\n" + "!" * 100 + "\n" + warning + "\n" + "!" * 100 + "\n", file=sys.stderr, flush=True
        )
    app = create_app(model=model, site_dir=site_dir or ROOT / "site", host=host, port=port)
    shown = f"[{host}]" if ":" in host else host
    if warning:
        shown = "127.0.0.1"
    print(
        f"agentloop demo server: http://{shown}:{port}/ (the book and its live panels)",
        file=sys.stderr,
        flush=True,
    )
    try:
        uvicorn.Server(uvicorn_config(app, host, port)).run()
    finally:
        app.state.current.backends.stop_on_exit()  # a vLLM server the page started ends with the demo server
    return 0
