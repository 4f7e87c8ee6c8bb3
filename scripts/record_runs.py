"""Record the book's replays from the real demo server, so that they never go stale silently.

Each `docs/chapters/runs/<name>.spec.json` says what to record:
  {"kind": "run", "model": "agent-qwen3_5", "question": "…", "settings": {…}, "forced": […]?, "decisions": […]?}
      → <name>.jsonl, the run's events as the server streamed them, one JSON object a line;
  {"kind": "api", "model": "…"?, "method": "GET" | "POST", "path": "/api/…", "body": {…}?}
      → <name>.json, the server's answer.
A run may attach files, "attachments": ["media/photo.jpg", …], and an api body may name one as
{"attachment": {"file": "media/photo.jpg"}}: paths relative to docs/chapters/runs/, sent as the panels send
them (name and base64 data).
The server runs in this process on a free port, with forced continuations allowed (a spec may force what the
model writes, for teaching a case a model does not produce by itself). Permissions are answered from
"decisions" in order ("approve" or "deny"; approve when the list runs out).

    python scripts/record_runs.py [NAME ...]      # all specs, or those named
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo_server.app import create_app  # noqa: E402
from demo_server.client import Client, ServerThread, free_port  # noqa: E402

RUNS = ROOT / "docs" / "chapters" / "runs"
# The timings and ids that differ between two recordings of the same run.
VOLATILE = {"ms", "decode_ms", "tok_per_s", "run_id", "t_ms", "src"}  # src: line numbers move


def specs(names: list[str] | None = None) -> dict[str, dict]:
    found = {
        p.name.removesuffix(".spec.json"): json.loads(p.read_text())
        for p in sorted(RUNS.glob("*.spec.json"))
    }
    if names:
        missing = set(names) - set(found)
        if missing:
            raise SystemExit(f"no spec named {', '.join(sorted(missing))} in {RUNS}")
        found = {n: found[n] for n in names}
    return found


def use_model(client: Client, model: str | None) -> None:
    """Load `model` on the server unless it is already the one loaded."""
    if not model or client.wait_ready(600).get("model") == model:
        return
    r = client.post("/api/models/load", {"model": model})
    if r.status_code >= 300:
        raise RuntimeError(f"loading {model}: {r.status_code} {r.text}")
    status = client.wait_ready(600)
    if status.get("model") != model:
        raise RuntimeError(f"loading {model} failed: the server has {status.get('model')}")


def attachment(path: str) -> dict:
    """A file under RUNS as the panels send it: its name and its bytes in base64."""
    data = (RUNS / path).read_bytes()
    return {"name": Path(path).name, "data": base64.b64encode(data).decode()}


def with_files(body: dict) -> dict:
    """An api body whose {"attachment": {"file": …}} is replaced by the file itself."""
    if isinstance(body.get("attachment"), dict) and "file" in body["attachment"]:
        return {**body, "attachment": attachment(body["attachment"]["file"])}
    return body


def record_run(client: Client, spec: dict) -> list[dict]:
    files = [attachment(path) for path in spec.get("attachments", [])]
    run_id = client.start_run(spec["question"], spec.get("settings", {}), spec.get("forced"), files)
    decisions = list(spec.get("decisions", []))
    events = []
    for event in client.run_events(run_id):
        events.append(event)
        if event["type"] == "permission" and not spec.get("settings", {}).get("auto_approve"):
            approve = (decisions.pop(0) if decisions else "approve") == "approve"
            r = client.post(
                f"/api/runs/{run_id}/decision", {"call_id": event["call_id"], "approve": approve}
            )
            r.raise_for_status()
    return events


def record_api(client: Client, spec: dict) -> dict:
    r = (
        client.get(spec["path"])
        if spec.get("method", "GET") == "GET"
        else client.post(spec["path"], with_files(spec.get("body", {})))
    )
    r.raise_for_status()
    return r.json()


def record(spec: dict, client: Client):
    use_model(client, spec.get("model"))
    return record_run(client, spec) if spec["kind"] == "run" else record_api(client, spec)


def save(name: str, spec: dict, recorded, folder: Path = RUNS) -> Path:
    if spec["kind"] == "run":
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in recorded))
    else:
        path = folder / f"{name}.json"
        path.write_text(json.dumps(recorded, ensure_ascii=False, indent=1) + "\n")
    return path


def structure(recorded) -> list:
    """What two recordings of the same spec share: the order of the events and the fields each carries, with
    each step's run of token events counted as one."""
    if isinstance(recorded, dict):
        return sorted(recorded)
    shape: list = []
    for e in recorded:
        item = (e["type"], tuple(sorted(set(e) - VOLATILE)))
        if e["type"] == "token" and shape and shape[-1][0] == "token":
            continue
        shape.append(item)
    return shape


class Recorder:
    """The demo server in this process, and a client of it."""

    def __enter__(self) -> Client:
        self.site = tempfile.TemporaryDirectory()
        app = create_app(site_dir=self.site.name, allow_forced=True)
        self.server = ServerThread(app, free_port()).start()
        self.client = Client(self.server.url, timeout=600)
        return self.client

    def __exit__(self, *exc) -> None:
        self.client.close()
        self.server.stop()
        self.site.cleanup()


def main(names: list[str]) -> int:
    chosen = specs(names)
    with Recorder() as client:
        for name, spec in chosen.items():
            path = save(name, spec, record(spec, client))
            print(f"recorded {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
