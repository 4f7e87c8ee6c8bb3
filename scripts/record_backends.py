"""Record chapter 11's pair of runs: one question, greedy, once on each backend, the same harness
around both.

SimpleBackend (transformers, here) and VLLMBackend (a vLLM server started from .venv-vllm, `make
vllm`, on 127.0.0.1, and stopped after; or the one at $VLLM_URL) each answer QUESTION with
agent-qwen3_5, and the runs' events are written to docs/chapters/runs/ch11-transformers.jsonl and
ch11-vllm.jsonl, which the chapter's two panels replay side by side. tests/test_vllm_backend.py
re-records the vLLM run and checks its structure.

    python scripts/record_backends.py [transformers] [vllm]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentloop.harnesses.base import run_reporting_errors  # noqa: E402
from agentloop.harnesses.settings import RunSettings  # noqa: E402
from agentloop.harnesses.simple_harness import SimpleHarness  # noqa: E402
from agentloop.paths import MODELS_DIR  # noqa: E402

RUNS = ROOT / "docs" / "chapters" / "runs"
MODEL = "agent-qwen3_5"
QUESTION = "What is 48213 * 9127?"  # the running question (chapter 1)
SETTINGS = RunSettings(max_steps=4, max_new_tokens=96, temperature=0.0, auto_approve=True)


def record(llm, folder: Path) -> list[dict]:
    """One run of SimpleHarness over `llm`, its events in order."""
    got: list[dict] = []
    run_reporting_errors(SimpleHarness(llm, [], QUESTION, SETTINGS, got.append, folder))
    return got


def save(name: str, recorded: list[dict]) -> Path:
    path = RUNS / f"{name}.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in recorded))
    return path


def main(which: list[str]) -> int:
    """Record both runs, or those named (transformers, vllm). Record the transformers run with no
    vLLM server running: a CPU server's engine keeps a core busy, which slows transformers."""
    from agentloop.model_backends.simple_backend import SimpleBackend
    from agentloop.model_backends.vllm.backend import VLLMBackend
    from agentloop.model_backends.vllm.local import LocalServer

    which = which or ["transformers", "vllm"]
    work = Path(tempfile.mkdtemp())
    if "transformers" in which:
        simple = SimpleBackend(str(MODELS_DIR / MODEL), device="cpu")
        simple.model_id = MODEL  # as the book's menu names it; the vLLM server serves it so too
        print(save("ch11-transformers", record(simple, work)))
    if "vllm" not in which:
        return 0
    url, server = os.environ.get("VLLM_URL"), None
    if not url:
        server = LocalServer(str(MODELS_DIR / MODEL), 8178, work / "vllm.log").wait()
        url = server.url
    try:
        print(save("ch11-vllm", record(VLLMBackend(url), work)))
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
