"""A model load: its own small event stream, read at `GET /api/models/load/events`.

A Hub model's family is checked from its config.json alone, before any weights come down; then the download
(model_folder.download), with the progress huggingface_hub reports; then the weights go into memory; then
`ready`, or an `error` in English and Chinese. The events are agentloop/events.py's (load_start … ready). Which
model is current, and the swap, are model.py's.
"""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from pathlib import Path

from agentloop import events, model_families
from agentloop.model_backends import model_folder
from demo_server.stream import EventLog


class LoadJob:
    def __init__(self, model: str):
        self.id = uuid.uuid4().hex[:12]
        self.model = model
        self.log = EventLog(("ready", "error"))

    def start(
        self,
        ref: str,
        hub: bool,
        current,
        kind: str = "transformers",
        served: bool = False,
        mtp: bool | None = None,
    ) -> None:
        """Load in a thread; `current` (model.CurrentModel) swaps the backend in, or keeps the error."""
        threading.Thread(
            target=load,
            args=(self, ref, hub, current, kind, served, mtp),
            name=f"load-{self.id}",
            daemon=True,
        ).start()


def load(
    job: LoadJob,
    ref: str,
    hub: bool,
    current,
    kind: str = "transformers",
    served: bool = False,
    mtp: bool | None = None,
) -> None:
    """`kind`: the way the model runs (backends.py), whose start says what it does as `loading`
    events; `served`: a model the server at VLLM_URL serves, whose
    config.json VLLMBackend reads (alone, first) when it opens; `mtp`: the MTP switch of a vLLM
    server the page starts (None: as it is)."""
    start = time.perf_counter()
    emit = job.log.append
    try:
        emit(events.make("load_start", load_id=job.id, model=job.model))
        if served:
            family = None
        elif (
            hub
        ):  # config.json alone first: an unknown family is refused before any weights come down
            family = model_folder.check_family(ref)
            emit(events.make("family", model=job.model, family=family.key))
            model_folder.download(ref, progress=progress_bars(job))
        else:
            config = json.loads((Path(ref) / "config.json").read_text())
            family = model_families.for_config(config)
            emit(events.make("family", model=job.model, family=family.key))
        emit(events.make("loading", model=job.model))
        backend = current.replace(job.model, ref, kind, emit, mtp)
        if family is None:
            family = backend.family
            emit(events.make("family", model=job.model, family=family.key))
        emit(
            events.make(
                "ready",
                model=job.model,
                family=family.key,
                ms=round((time.perf_counter() - start) * 1000, 1),
            )
        )
    except Exception as e:  # reported to every reader; the server goes on serving
        message = model_folder.explain(job.model, e)
        current.load_failed(message)
        emit(events.make("error", message=message))


def progress_bars(job: LoadJob):
    """A tqdm class that turns huggingface_hub's progress bars into `download` events (at most 4 a second)."""
    from tqdm.std import tqdm

    state = {"bytes_done": 0, "bytes_total": 0, "files_done": 0, "files_total": 0}
    last = [0.0]

    def report(bar, force: bool = False) -> None:
        if bar.unit == "B":
            if not str(bar.desc).startswith("Reconstruct"):
                return  # the network-transfer bar: the bytes written are the ones that count
            state["bytes_done"], state["bytes_total"] = int(bar.n), int(bar.total or 0)
        else:
            state["files_done"], state["files_total"] = int(bar.n), int(bar.total or 0)
        now = time.monotonic()
        if force or now - last[0] >= 0.25:
            last[0] = now
            job.log.append(events.make("download", model=job.model, **state))

    class Progress(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs.update(file=io.StringIO(), disable=False)
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            result = super().update(n)
            report(self, force=self.total is not None and self.n >= self.total)
            return result

    return Progress
