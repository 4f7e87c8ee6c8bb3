"""The one model every tab uses (the seed's current_llm), and the one run that may use it at a time.

A load or switch by one client is what every client then uses: `GET /api/status` shows it to all. Nothing
interleaves on the model: a second run while one is going is refused (HTTP 409, not queued: a queued run would
start when its reader may have gone), and so is a switch while a run is going or a load is under way. A forward
pass outside a run (`/api/next-token`) takes the same model lock as a run's generation.

A load is its own small event stream (LOAD_FIELDS), read at `GET /api/models/load/events`: a Hub model's family is
checked from its config.json alone, before any weights come down; then the download, with the progress that
huggingface_hub reports; then the weights go into memory; then `ready`, or an `error` in English and Chinese.
"""

from __future__ import annotations

import io
import json
import re
import struct
import threading
import time
import uuid
from collections import Counter, OrderedDict
from dataclasses import asdict
from pathlib import Path

from agentloop import model_families
from agentloop.harnesses.simple_harness import RunSettings
from agentloop.model_backends import model_folder
from demo_server.backends import Backends, kind_of
from demo_server.errors import ApiError
from demo_server.runs import ORPHAN_S, Run, RunModel
from demo_server.stream import EventLog

# The real models of the book, offered in the menu whether or not they are downloaded yet.
REAL_MODELS: dict[str, dict] = {
    "Qwen/Qwen3.5-0.8B": {"family": "qwen3_5", "size": "0.8B"},
    "google/gemma-4-E2B-it": {"family": "gemma4", "size": "E2B (2B effective)"},
}
LOCAL_PREFIXES = ("tiny-", "agent-")  # checkpoints built or trained here, in models/
LOCAL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
KEEP_RUNS = 16  # finished runs kept for late readers

# The load stream's events: name -> fields (every event also has `type`).
LOAD_FIELDS: dict[str, tuple[str, ...]] = {
    "load_start": ("load_id", "model"),
    "family": ("model", "family"),  # the family is known: config.json alone was read
    # huggingface_hub's progress: bytes written of the bytes to fetch, and files done of the files to fetch.
    "download": ("model", "bytes_done", "bytes_total", "files_done", "files_total"),
    "loading": ("model",),  # the weights are going into memory
    "ready": ("model", "family", "ms"),
    "error": ("message",),  # {en, zh}, as in agentloop/events.py
}


def load_event(kind: str, **fields) -> dict:
    if kind not in LOAD_FIELDS or set(fields) != set(LOAD_FIELDS[kind]):
        raise ValueError(f"bad load event {kind}: {sorted(fields)}")
    return {"type": kind, **fields}


class LoadJob:
    def __init__(self, model: str):
        self.id = uuid.uuid4().hex[:12]
        self.model = model
        self.log = EventLog(("ready", "error"))


class CurrentModel:
    def __init__(self, device: str | None = None, orphan_s: float = ORPHAN_S):
        self.device = device
        self.backends = Backends(device)  # transformers here, or vLLM (a server this page started, or VLLM_URL's)
        self.orphan_s = orphan_s
        self.backend = None
        self.name: str | None = None  # as the menu and run_start name it
        self.specs: dict | None = None
        self.error: dict | None = None  # why the last load failed, while no model is loaded
        self.run: Run | None = None  # the run using the model now
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self.load: LoadJob | None = None  # the load under way, or the last one
        self.loading = False
        self.lock = threading.Lock()  # guards the fields above
        self.model_lock = threading.Lock()  # held by every forward pass
        self.text_lock = threading.Lock()  # held while the tokenizer or the chat template runs

    # -- what every tab sees --------------------------------------------------------------------------------------

    def status(self) -> dict:
        with self.lock:
            b = self.backend
            return {
                "ok": b is not None or self.loading,
                "model": self.name,
                "family": b.family.key if b else None,
                "harness": "simple",
                "backend": kind_of(b) if b else "transformers",
                "where": self.backends.where(kind_of(b)) if b else None,
                "device": str(b.device) if b and hasattr(b, "device") else None,
                "dtype": str(b.dtype).removeprefix("torch.") if b and hasattr(b, "dtype") else None,
                "busy": self.run is not None,
                "loading": self.loading,
                "loading_model": self.load.model if self.loading and self.load else None,
                "defaults": defaults(b) if b else None,
                "specs": self.specs,
                "error": self.error,
            }

    def menu(self) -> list[dict]:
        with self.lock:
            current = self.name
        served = self.backends.served_menu() if self.backends.vllm_url else []
        local = [{**m, "backends": self.backends.offered(local=True)} for m in model_menu()]
        return [{**m, "current": m["id"] == current} for m in served + local]

    def get_run(self, run_id: str) -> Run:
        with self.lock:
            run = self.runs.get(run_id)
        if run is None:
            raise ApiError(404, f"There is no run {run_id!r} (unknown, or finished long ago).",
                           f"沒有執行 {run_id!r}（不存在，或早已結束）。")
        return run

    # -- a run ------------------------------------------------------------------------------------------------------

    def start_run(self, question: str, settings_given: dict, forced: list[str] | None) -> Run:
        with self.lock:
            self._refuse_if_busy("start a run", "開始執行")
            if self.backend is None:
                raise ApiError(409, "No model is loaded: pick one in the model menu (POST /api/models/load).",
                               "尚未載入模型：請先在模型選單中選一個（POST /api/models/load）。", self.error)
            settings = RunSettings(**{**defaults(self.backend), **settings_given})
            settings.tools = tuple(settings.tools)
            llm = RunModel(self.backend, self.name, self.model_lock, self.text_lock, forced)
            run = Run(llm, question, settings, self._run_ended, self.orphan_s)
            self.run = run
            self.runs[run.id] = run
            while len(self.runs) > KEEP_RUNS:
                self.runs.popitem(last=False)
        run.start()
        return run

    def _run_ended(self, run: Run) -> None:
        with self.lock:
            if self.run is run:
                self.run = None

    def _refuse_if_busy(self, what_en: str, what_zh: str) -> None:
        if self.loading:
            raise ApiError(409, f"Cannot {what_en}: the model {self.load.model} is loading. Wait until "
                                f"GET /api/status says loading: false.",
                           f"無法{what_zh}：模型 {self.load.model} 正在載入，請等它載入完成。")
        if self.run is not None:
            raise ApiError(409, f"Cannot {what_en}: run {self.run.id} is using the model (one run at a time, "
                                f"for every tab). Stop it or wait for it to end; a run waiting for a permission "
                                f"that nobody watches is stopped after {self.orphan_s:g} s.",
                           f"無法{what_zh}：執行 {self.run.id} 正在使用模型（所有分頁一次只能有一個執行）。"
                           f"請先停止它或等它結束。", {"active_run": self.run.id})

    # -- a load -----------------------------------------------------------------------------------------------------

    def start_load(self, model: str, ref: str | None = None, hub: bool = False,
                   backend: str = "transformers") -> LoadJob:
        """Begin loading `model` (a menu name or Hub id; `ref`: a folder to load it from) in a thread, on
        `backend`: transformers here, or vLLM (a model the server at VLLM_URL serves, by its name there)."""
        served = backend == "vllm" and self.backends.vllm_url is not None
        if served:
            ref, hub = model, False
        elif ref is None:
            ref, hub = resolve(model)
        with self.lock:
            self._refuse_if_busy("load a model", "載入模型")
            self.loading = True
            job = self.load = LoadJob(model)
        threading.Thread(target=self._load, args=(job, ref, hub, backend, served), name=f"load-{job.id}",
                         daemon=True).start()
        return job

    def _load(self, job: LoadJob, ref: str, hub: bool, kind: str = "transformers", served: bool = False) -> None:
        start = time.perf_counter()
        emit = job.log.append
        try:
            emit(load_event("load_start", load_id=job.id, model=job.model))
            if served:  # the server's own model: VLLMBackend reads its config.json (alone) below
                family = None
            elif hub:  # config.json alone first: an unknown family is refused before any weights come down
                family = model_folder.check_family(ref)
                emit(load_event("family", model=job.model, family=family.key))
                _download_with_progress(ref, job)
            else:
                config = json.loads((Path(ref) / "config.json").read_text())
                family = model_families.for_config(config)
                emit(load_event("family", model=job.model, family=family.key))
            emit(load_event("loading", model=job.model))
            # The old model goes first, so two never share the memory (after any forward pass still on it).
            with self.model_lock:
                with self.lock:
                    old, self.backend, self.name, self.specs = self.backend, None, None, None
                if old is not None:
                    old.unload()
            backend = self.backends.open(kind, job.model, ref)
            if family is None:
                family = backend.family
                emit(load_event("family", model=job.model, family=family.key))
            specs = model_specs(backend)
            with self.lock:
                self.backend, self.name, self.specs, self.error = backend, job.model, specs, None
                self.loading = False
            emit(load_event("ready", model=job.model, family=family.key,
                            ms=round((time.perf_counter() - start) * 1000, 1)))
        except Exception as e:  # reported to every reader; the server goes on serving
            message = load_error(job.model, e)
            with self.lock:
                self.loading = False
                if self.backend is None:
                    self.error = message
            emit(load_event("error", message=message))


def resolve(model: str) -> tuple[str, bool]:
    """(what SimpleBackend loads, whether it comes from the Hub) for a name from the menu or a Hub id."""
    models_dir = Path(model_folder.MODELS_DIR)
    if LOCAL_NAME.fullmatch(model) and not model.startswith("models--"):
        folder = models_dir / model
        if (folder / "config.json").is_file():
            return str(folder), False
        raise ApiError(404, f"There is no checkpoint {model!r} in models/: GET /api/models lists them.",
                       f"models/ 中沒有 {model!r}：GET /api/models 列出可用的模型。")
    if HUB_ID.fullmatch(model) and ".." not in model:
        return model, True
    raise ApiError(422, f"{model!r} is neither a checkpoint in models/ nor a Hugging Face id like Qwen/Qwen3.5-0.8B.",
                   f"{model!r} 既不是 models/ 中的模型，也不是像 Qwen/Qwen3.5-0.8B 這樣的 Hugging Face 名稱。")


def load_error(model: str, e: Exception) -> dict:
    if isinstance(e, model_families.UnsupportedModel):
        return {"en": f"{model} cannot be loaded: {e}. Its weights were not downloaded.",
                "zh": f"無法載入 {model}：agentloop 不支援這個模型類型（{e}）。權重沒有下載。"}
    name = type(e).__name__
    if name in ("LocalEntryNotFoundError", "IncompleteSnapshotError", "OfflineModeIsEnabled"):
        return {"en": f"{model} could not be downloaded: the Hugging Face Hub cannot be reached and models/ "
                      f"does not hold it whole ({name}: {e}).",
                "zh": f"無法下載 {model}：連不上 Hugging Face Hub，而 models/ 裡也沒有完整的模型（{name}: {e}）。"}
    return {"en": f"Loading {model} failed: {name}: {e}", "zh": f"載入 {model} 失敗：{name}: {e}"}


def _download_with_progress(model_id: str, job: LoadJob) -> None:
    """Fetch what the cache lacks, as model_folder.download() does, reporting huggingface_hub's progress bars."""
    from huggingface_hub import snapshot_download
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
            job.log.append(load_event("download", model=job.model, **state))

    class Progress(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs.update(file=io.StringIO(), disable=False)
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            result = super().update(n)
            report(self, force=self.total is not None and self.n >= self.total)
            return result

    snapshot_download(model_id, revision=model_families.REVISIONS.get(model_id),
                      cache_dir=model_folder.MODELS_DIR, tqdm_class=Progress)


# -- the settings form's defaults and the model's facts ------------------------------------------------------------


def defaults(backend) -> dict:
    """RunSettings' defaults, with the checkpoint's recommended sampling: what a run gets for a field not sent."""
    s = backend.sampling_defaults
    d = asdict(RunSettings(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k))
    d["tools"] = list(d["tools"])
    return d


def model_specs(backend) -> dict:
    """The model's shape, from config.json (the language model's part of it) and its weights."""
    config = backend.config
    text = config.get("text_config", config)
    layers = text.get("num_hidden_layers")
    layer_types = text.get("layer_types") or (["full_attention"] * layers if layers else [])
    return {
        "architecture": (config.get("architectures") or [None])[0],
        "model_type": config.get("model_type"),
        "layers": layers,
        "layer_types": layer_types,
        "layer_type_counts": dict(Counter(layer_types)),
        "hidden_size": text.get("hidden_size"),
        "heads": text.get("num_attention_heads"),
        "kv_heads": text.get("num_key_value_heads"),
        "head_dim": text.get("head_dim"),
        "vocabulary": text.get("vocab_size"),
        "context_length": backend.context_length,
        # A vLLM server keeps the weights: their count is not known here.
        "parameters": sum(p.numel() for p in backend.model.parameters()) if hasattr(backend, "model") else None,
    }


def model_menu() -> list[dict]:
    """The checkpoints in models/ (tiny-*, agent-*) and the real models, each with its family, size and a
    description in English and Chinese; the default model (`agentloop.terminal.default_model()`) first, marked
    `default: true`."""
    from agentloop.terminal import default_model

    default = Path(default_model()).name
    models_dir = Path(model_folder.MODELS_DIR)
    items = []
    if models_dir.is_dir():
        for folder in sorted(models_dir.iterdir()):
            config_path = folder / "config.json"
            if not folder.name.startswith(LOCAL_PREFIXES) or not config_path.is_file():
                continue
            try:
                config = json.loads(config_path.read_text())
                family = model_families.for_config(config)
            except (ValueError, OSError):  # not a model a harness can run (e.g. the MTP drafter)
                continue
            kind = "tiny" if folder.name.startswith("tiny-") else "trained"
            items.append({"id": folder.name, "kind": kind, "family": family.key, "downloaded": True,
                          "bytes": _bytes(folder), "parameters": _parameters(folder), "size": None,
                          "description": _describe_local(folder, kind, family.name),
                          "default": folder.name == default})
    for model_id, info in REAL_MODELS.items():
        cache = models_dir / f"models--{model_id.replace('/', '--')}"
        snapshots = [s for s in sorted((cache / "snapshots").glob("*"))
                     if (s / "config.json").exists() and any(s.glob("*.safetensors"))] if cache.is_dir() else []
        items.append({"id": model_id, "kind": "real", "family": info["family"], "downloaded": bool(snapshots),
                      "bytes": _bytes(cache / "blobs") if snapshots else None,
                      "parameters": _parameters(snapshots[-1]) if snapshots else None, "size": info["size"],
                      "description": _describe_real(model_id, info, bool(snapshots)),
                      "default": model_id == default})
    return sorted(items, key=lambda m: not m["default"])  # stable: the rest keep their order


def _describe_local(folder: Path, kind: str, family_name: str) -> dict:
    """What a checkpoint of models/ is, said plainly."""
    if kind == "tiny":
        return {"en": f"The real {family_name} architecture at a tiny size, with random weights: for tests. "
                      f"It writes noise.",
                "zh": f"真正的 {family_name} 架構，縮成極小的尺寸，權重是隨機的：用來測試。它寫出來的只是雜訊。"}
    card = f"models/{folder.name}/README.md"
    return {"en": f"A toy: the {family_name} architecture at a tiny size, trained on this machine's CPU for the "
                  f"book, to call run_python and answer with its result, and little else. See its model card "
                  f"({card}).",
            "zh": f"玩具模型：{family_name} 的架構縮成極小的尺寸，在這台機器的 CPU 上為本書訓練，學會呼叫 run_python "
                  f"並用它的結果回答，除此之外幾乎什麼都不會。詳見它的模型卡（{card}）。"}


def _describe_real(model_id: str, info: dict, downloaded: bool) -> dict:
    """A real model of the book: where it comes from, at which revision, and whether it must be downloaded."""
    family_name = model_families.FAMILIES[info["family"]].name
    revision = model_families.REVISIONS.get(model_id)
    at_en = f"at the pinned revision {revision[:12]}" if revision else "at its latest revision (none is pinned)"
    at_zh = f"固定在版本 {revision[:12]}" if revision else "取最新版本，沒有固定版本"
    if downloaded:
        return {"en": f"The real model ({family_name}, {info['size']}), from the Hugging Face Hub "
                      f"{at_en}; already downloaded into models/.",
                "zh": f"真正的模型（{family_name}，{info['size']}），來自 Hugging Face Hub，{at_zh}；"
                      f"已下載到 models/。"}
    return {"en": f"The real model ({family_name}, {info['size']}): picking it downloads it from the "
                  f"Hugging Face Hub {at_en}, so the Hub must be reachable from this machine.",
            "zh": f"真正的模型（{family_name}，{info['size']}）：選了它就會從 Hugging Face Hub 下載"
                  f"（{at_zh}），所以這台機器必須連得上 Hub。"}


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def _parameters(folder: Path) -> int | None:
    """The parameter count, from the safetensors headers alone (8 bytes of length, then JSON)."""
    total, found = 0, False
    for path in folder.glob("*.safetensors"):
        try:
            with open(path, "rb") as f:
                (length,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(min(length, 100_000_000)))
        except (OSError, ValueError, struct.error):
            return None
        for name, entry in header.items():
            if name != "__metadata__":
                n = 1
                for d in entry.get("shape", []):
                    n *= d
                total += n
        found = True
    return total if found else None
