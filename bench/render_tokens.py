"""How long the panel takes to draw 10,000 token events (the book's build: bench/build.py).

The panel part serves docs/assets on 127.0.0.1, loads panel.css and the render.js module into a blank page in
headless Chromium, hands 10,000 token events to the renderer's entry point (render(), the one the panels use)
and measures the main thread: performance.now() around the call plus a forced layout, and Chrome's own TaskDuration metric.
It also streams the same events in 100 batches, one per animation frame, as a live run arrives.

Prints, last:
    render_10000_tokens_s: <s> (target < 1 s)
"""

from __future__ import annotations

import functools
import http.server
import random
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "docs/assets"
CHROMIUM = "/usr/bin/chromium"
N = 10_000
RUNS = 5


def token_events(n: int) -> list[dict]:
    """Token events shaped as agentloop.events.FIELDS["token"] says, with a thought and a reply channel."""
    sys.path.insert(0, str(ROOT))
    from agentloop.events import make

    rng = random.Random(0)
    words = [
        "▁the",
        "▁model",
        "▁reads",
        "▁tokens",
        ",",
        "▁and",
        "▁writes",
        "\n",
        "▁one",
        "▁at",
        "▁a",
        "▁time",
    ]
    out = []
    for i in range(n):
        piece = words[i % len(words)]
        p = rng.random() ** 0.3
        top = sorted([p, *(rng.random() * (1 - p) for _ in range(4))], reverse=True)
        out.append(
            make(
                "token",
                step=1,
                index=i,
                id=1000 + i % 500,
                piece=piece,
                text=piece.replace("▁", " "),
                special=False,
                channel="thought" if i < n // 5 else "content",
                p=p,
                logprob=-0.1,
                rank=1,
                p_sampled=p,
                kept=3,
                top=[
                    {"id": 1000 + k, "piece": words[(i + k) % len(words)], "p": q, "kept": k < 3}
                    for k, q in enumerate(top)
                ],
            )
        )
    return out


PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>bench</title>
<link rel="stylesheet" href="panel.css"></head>
<body><div id="box" class="agentloop-panel"></div></body></html>"""

BATCH_JS = """async (events) => {
    const { render } = await import("/render.js");
    const box = document.getElementById("box");
    box.replaceChildren();
    const t0 = performance.now();
    render(box, events);
    void box.offsetHeight;  // force the layout the drawing caused, inside the measurement
    return (performance.now() - t0) / 1000;
}"""

STREAM_JS = """async (events) => {
    const { Renderer } = await import("/render.js");
    const box = document.getElementById("box");
    box.replaceChildren();
    const r = new Renderer(box, {});
    let i = 0, busy = 0;
    return new Promise((done) => {
        const frame = () => {
            const t0 = performance.now();
            for (const end = Math.min(events.length, i + 100); i < end; i++) r.push(events[i]);
            r.flushNow();
            void box.offsetHeight;
            busy += performance.now() - t0;
            if (i < events.length) requestAnimationFrame(frame); else done(busy / 1000);
        };
        requestAnimationFrame(frame);
    });
}"""


def serve_assets() -> http.server.ThreadingHTTPServer:
    """docs/assets on 127.0.0.1, with the bench page at /: modules load only over HTTP, not from a file."""

    class Assets(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path != "/":
                return super().do_GET()
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Assets, directory=str(ASSETS))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def bench_render() -> tuple[float, float, float]:
    from playwright.sync_api import sync_playwright

    events = token_events(N)
    assets = serve_assets()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
            ],
        )
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"http://127.0.0.1:{assets.server_address[1]}/")
        page.evaluate(
            '() => import("/render.js")'
        )  # fetched and compiled once, outside the measurements
        handle = page.evaluate_handle(
            "(e) => e", events
        )  # transferred once, outside the measurements
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")

        def task_s() -> float:
            return next(
                m["value"]
                for m in cdp.send("Performance.getMetrics")["metrics"]
                if m["name"] == "TaskDuration"
            )

        wall, tasks = [], []
        for _ in range(RUNS):
            before = task_s()
            wall.append(page.evaluate(BATCH_JS, handle))
            tasks.append(task_s() - before)
        stream = page.evaluate(STREAM_JS, handle)
        drawn = page.evaluate("document.querySelectorAll('#box .al-stream .al-tok').length")
        assert drawn == N, f"drew {drawn} tokens, not {N}"
        browser.close()
    assets.shutdown()
    print(
        f"render {N} tokens, {RUNS} runs: wall {', '.join(f'{w:.3f}' for w in wall)} s; "
        f"TaskDuration {', '.join(f'{t:.3f}' for t in tasks)} s"
    )
    print(f"stream {N} tokens in 100 frames: {stream:.3f} s of main-thread time")
    return statistics.median(wall), statistics.median(tasks), stream


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: install Debian's chromium")
        return 1
    wall, task, _ = bench_render()
    # The median of the runs; TaskDuration counts everything the main thread did during the call.
    print(f"render_10000_tokens_s: {max(wall, task):.3f} (target < 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
