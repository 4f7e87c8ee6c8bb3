"""What pi sends its model, captured from the real pi in node_modules: its system prompt, its tools, and how a bash
result comes back, stored in agentloop/training/pi_request.json for the training data in pi's format (issue 42).

pi builds its system prompt and tool definitions in its own code; this runs pi once (`pi -p`, its own prompt and
built-in tools, nothing of the user's) against a stand-in OpenAI-compatible endpoint on loopback that records each
request. The stand-in answers the first request with a bash call, `python3 -c 'print(17 * 23)'`, which pi runs in
an empty temporary folder, and the second with a final answer, so the second request shows how pi returns a tool's
output to the model. The working folder, the date and pi's own folder in the prompt become {cwd}, {date} and {pi},
which pi_format.py fills in. tests/test_training_data.py runs this again and fails when pi's output differs from the stored one: a new
pi means new training data.

    .venv/bin/python scripts/capture_pi_request.py          # print what pi sends now
    .venv/bin/python scripts/capture_pi_request.py --write  # store it
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentloop.harnesses.pi.command import (  # noqa: E402
    NODE,
    PI_CLI,
    PI_ISOLATED,
    PI_SETTINGS,
    endpoint_provider,
)

STORED = ROOT / "agentloop" / "training" / "pi_request.json"
PACKAGE = PI_CLI.parents[2] / "package.json"
QUESTION = "What is 17 * 23?"
COMMAND = "python3 -c 'print(17 * 23)'"


def chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "capture",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "capture",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def serve(requests: list[dict]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if len(requests) == 1:
                call = {"command": COMMAND}
                self.wfile.write(
                    chunk(
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "bash", "arguments": json.dumps(call)},
                                }
                            ],
                        }
                    )
                )
                self.wfile.write(chunk({}, "tool_calls"))
            else:
                self.wfile.write(chunk({"role": "assistant", "content": "It is 391."}))
                self.wfile.write(chunk({}, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def capture() -> dict:
    """pi's two requests for QUESTION, reduced to what the training data needs."""
    requests: list[dict] = []
    server = serve(requests)
    try:
        with tempfile.TemporaryDirectory(prefix="pi-capture-") as tmp:
            agent_dir, cwd = Path(tmp) / "agent", Path(tmp) / "work"
            agent_dir.mkdir()
            cwd.mkdir()
            (agent_dir / "settings.json").write_text(json.dumps(PI_SETTINGS))
            model = {
                "id": "capture",
                "name": "capture",
                "reasoning": False,
                "input": ["text"],
                "contextWindow": 8192,
                "maxTokens": 256,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }
            base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
            provider = endpoint_provider(
                base_url, "capture", model
            )  # as PiHarness registers its endpoint
            (agent_dir / "models.json").write_text(json.dumps({"providers": {"capture": provider}}))
            env = {
                "PATH": "/usr/bin:/bin",
                "HOME": tmp,
                "PI_CODING_AGENT_DIR": str(agent_dir),
                "PI_OFFLINE": "1",
                "PI_TELEMETRY": "0",
            }
            done = subprocess.run(
                [
                    str(NODE),
                    str(PI_CLI),
                    "-p",
                    "--no-session",
                    *PI_ISOLATED,
                    "--provider",
                    "capture",
                    "--model",
                    "capture",
                    QUESTION,
                ],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            if len(requests) != 2:
                raise RuntimeError(f"pi sent {len(requests)} requests: {done.stdout}{done.stderr}")
            first, second = requests
            system = first["messages"][0]
            assert system["role"] in ("system", "developer"), system
            prompt = (
                system["content"]
                if isinstance(system["content"], str)
                else "".join(p["text"] for p in system["content"])
            )
            prompt = prompt.replace(str(cwd), "{cwd}")
            # where npm put pi, here
            for folder in (PI_CLI.parents[2].resolve(), PI_CLI.parents[2]):
                prompt = prompt.replace(str(folder), "{pi}")
            today = datetime.date.today()
            for form in (today.isoformat(), today.strftime("%A, %B %-d, %Y")):
                prompt = prompt.replace(form, "{date}")
            return {
                "note": "What pi sends its model (scripts/capture_pi_request.py): its system prompt with {cwd}, {date} "
                "and {pi} for the working folder, the date and pi's folder, its tools, and the messages of a bash call and its "
                "result as pi sends them back.",
                "pi_version": json.loads(PACKAGE.read_text())["version"],
                "system_prompt": prompt,
                "tools": first.get("tools") or [],
                "messages_after_a_call": second["messages"][1:],
            }
    finally:
        server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"store it in {STORED.name}")
    args = parser.parse_args()
    got = capture()
    text = json.dumps(got, indent=2, ensure_ascii=False) + "\n"
    if args.write:
        STORED.write_text(text)
        print(f"wrote {STORED.relative_to(ROOT)} (pi {got['pi_version']})")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
