"""`agentloop serve`: the demo server under uvicorn, on 127.0.0.1 unless told otherwise (and then loudly)."""

from __future__ import annotations

import sys

from agentloop.paths import ROOT
from demo_server.guard import bind_warning


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
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2)
    finally:
        app.state.current.backends.stop_started()  # a vLLM server the page started ends with the demo server
    return 0
