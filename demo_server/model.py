"""The one model every tab uses (the seed's current_llm), and the one run that may use it at a time.

A load or switch by one client is what every client then uses: `GET /api/status` shows it to all. Nothing
interleaves on the model: a second run while one is going is refused (HTTP 409, not queued: a queued run would
start when its reader may have gone), and so is a switch while a run is going or a load is under way. A stage
endpoint uses the model through `with current.text() as backend:` (the tokenizer and the chat template) and
`with current.forward(backend):` (a forward pass, under the same model lock as a run's generation); nothing
outside this file touches the locks. The load itself is loads.py's; the menu is menu.py's, and what the status
says of the model (specs, device, media) agentloop.model_backends.facts', which run_start reads too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

from agentloop import media, paths
from agentloop.harnesses import HARNESSES, harness_class
from agentloop.harnesses.settings import PI_OWN_TOOLS, run_settings
from agentloop.model_backends import facts
from agentloop.model_backends.vllm.client import ServerError
from agentloop.model_families import Sampling
from agentloop.tools import TOOLS
from demo_server import menu
from demo_server.backends import URL_WAY, Backends, Refused
from demo_server.conversations import Conversations
from demo_server.errors import ApiError
from demo_server.loads import LoadJob
from demo_server.runs import ORPHAN_S, Run, RunModel

KEEP_RUNS = 16  # finished runs kept for late readers
# ... and at most this many events among them, the newest run always kept: a long run is mostly token events
# (a few hundred bytes each), so sixteen runs of 20 steps × 8,192 tokens would otherwise hold gigabytes.
KEEP_EVENTS = 50_000


class CurrentModel:
    def __init__(self, device: str | None = None, orphan_s: float = ORPHAN_S):
        self.device = device
        # What runs the model: transformers here, or vLLM (a server this page started, or VLLM_URL's).
        self.backends = Backends(device)
        self.orphan_s = orphan_s
        self.backend = None
        self.name: str | None = None  # as the menu and run_start name it
        self.specs: dict | None = None
        self.examples: dict | None = None  # the model folder's examples.json (menu.model_examples)
        self.error: dict | None = None  # why the last load failed, while no model is loaded
        self.run: Run | None = None  # the run using the model now
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self.conversations = Conversations()  # what follow-up questions continue
        self.load: LoadJob | None = None  # the load under way, or the last one
        self.loading = False
        self.starting = False  # a run's attachments are being checked: the model is held for it
        self._lock = threading.Lock()  # guards the fields above
        self._model_lock = threading.Lock()  # held by every forward pass
        self._text_lock = threading.Lock()  # held while the tokenizer or the chat template runs

    # -- what every tab sees --------------------------------------------------------------------------------------

    def status(self) -> dict:
        with self._lock:
            b = self.backend
            on = (
                facts.runs_on(b)
                if b
                else {"backend": "transformers", "device": None, "dtype": None, "precision": None}
            )
            return {
                "ok": b is not None or self.loading,
                "model": self.name,
                "family": b.family.key if b else None,
                "harness": "simple",
                "harnesses": list(HARNESSES),
                "backend": on["backend"],
                "way": self.backends.way if b else "transformers",
                "ways": self.backends.ways(),
                "where": self.backends.where(on["backend"]) if b else None,
                "device": on["device"],
                "dtype": on["dtype"],
                "precision": on["precision"],
                "busy": self.run is not None or self.starting,
                "loading": self.loading,
                "loading_model": self.load.model if self.loading and self.load else None,
                "defaults": defaults(b),
                "tools": harness_tools(),
                "pi_tools": pi_own_tools(),
                # A run's MTP switch: offered where a drafter runs here (transformers); on a vLLM server MTP
                # is the server's, and mtp_server says how it runs instead.
                "mtp": bool(b and b.drafter_id() and b.kind == "transformers"),
                "mtp_server": self.backends.mtp_state(b),
                "specs": self.specs,
                "examples": self.examples,
                "media": media_status(b),
                "error": self.error,
            }

    def menu(self) -> tuple[list[dict], dict | None]:
        """The menu's entries (with VLLM_URL, the models that server serves first), and a notice
        ({en, zh}) when that server does not answer: the rest of the menu stays usable."""
        with self._lock:
            current = self.name
            on_url = self.backends.way == URL_WAY
        served, notice = [], None
        if self.backends.vllm_url:
            try:
                served = self.backends.served_menu()
            except ServerError:
                notice = self.backends.served_down()
        local = [{**m, "backends": self.backends.offered(local=True)} for m in menu.model_menu()]
        # A name both lists hold (VLLM_URL's server serving agent-gemma4) is two entries: the current
        # one is the one on the way the model runs now.
        return [
            {**m, "current": m["id"] == current and (m["kind"] == "served") == on_url}
            for m in served + local
        ], notice

    def get_run(self, run_id: str) -> Run:
        with self._lock:
            run = self.runs.get(run_id)
        if run is None:
            raise ApiError(
                404,
                f"There is no run {run_id!r} (unknown, or finished long ago).",
                f"沒有執行 {run_id!r}（不存在，或早已結束）。",
            )
        return run

    # -- the model, for one stage of the loop ---------------------------------------------------------------------

    @contextmanager
    def text(self) -> Iterator:
        """The ready backend, with the tokenizer and chat template to this caller alone."""
        backend = self._ready()
        with self._text_lock:
            yield backend

    @contextmanager
    def forward(self, backend) -> Iterator:
        """The model for a forward pass outside a run: refused (409) while a run generates, or when the model is
        no longer `backend` (switched since the caller tokenized with it)."""
        if not self._model_lock.acquire(blocking=False):
            raise ApiError(
                409,
                "The model is generating for a run; try again when it has finished.",
                "模型正在為一個執行產生內容，請等它完成後再試。",
            )
        try:
            if self.backend is not backend:  # switched meanwhile
                raise ApiError(
                    409,
                    "The model changed while this request waited; ask again.",
                    "模型在這個請求等待時換掉了，請再試一次。",
                )
            yield backend
        finally:
            self._model_lock.release()

    def _ready(self):
        with self._lock:
            if self.backend is None or self.loading:
                raise ApiError(
                    409,
                    "No model is ready: wait for the load to finish, or pick one "
                    "(POST /api/models/load).",
                    "模型尚未就緒：請等它載入完成，或先選一個模型（POST /api/models/load）。",
                )
            return self.backend

    # -- a run ------------------------------------------------------------------------------------------------------

    def start_run(
        self,
        question: str,
        settings_given: dict,
        forced: list[str] | None,
        conversation_id: str | None = None,
        files: list[tuple[str, bytes]] = (),
    ) -> Run:
        """A run of `question`: a follow-up in conversation `conversation_id`, or the first of a new one,
        with `files` (name, bytes) attached. Whole or not at all: nothing the request carries (its files, its
        `forced` text) is kept unless every check passes. The files are checked and saved outside the lock, the
        model held for this run meanwhile, so every tab's status answers while a video decodes."""
        settings, conversation = self._reserve(settings_given, conversation_id, bool(files))
        try:
            checked = self._checked(files)
            conversation = conversation or self.conversations.new()
            attachments = self._saved(checked, conversation)
            run = self._begin(question, settings, forced, conversation, attachments)
        finally:
            with self._lock:
                self.starting = False
        run.start()
        return run

    def _reserve(self, settings_given: dict, conversation_id: str | None, attaching: bool):
        """The run's settings and its conversation (None: a new one), with the model held for it; refused while
        the model is in use, and for settings, a harness or a conversation that cannot be run."""
        with self._lock:
            self._refuse_if_busy("start a run", "開始執行")
            # pi's own model runs at its provider: nothing needs to be loaded here for it.
            pi_own = settings_given.get("harness") == "pi" and bool(settings_given.get("pi_model"))
            if self.backend is None and not pi_own:
                raise ApiError(
                    409,
                    "No model is loaded: pick one in the model menu (POST /api/models/load).",
                    "尚未載入模型：請先在模型選單中選一個（POST /api/models/load）。",
                    self.error,
                )
            recommended = self.backend.sampling_defaults if self.backend else Sampling()
            settings = run_settings(recommended, **settings_given)
            server_mtp = self.backends.mtp_state(self.backend) if self.backend else None
            if settings.mtp and server_mtp is not None:
                raise ApiError(
                    400,
                    f"MTP on vLLM is the server's, not a run's: {server_mtp['says']['en']} "
                    f"Run with mtp false.",
                    f"vLLM 上的 MTP 由伺服器決定，不是單次執行的設定：{server_mtp['says']['zh']}"
                    f"請以 mtp false 執行。",
                )
            if settings.mtp and not (self.backend and self.backend.drafter_id()):
                raise ApiError(
                    400,
                    f"{self.name} has no MTP drafter: run it with mtp false (Gemma 4 has one).",
                    f"{self.name} 沒有 MTP 草稿模型：請以 mtp false 執行（Gemma 4 有）。",
                )
            if settings.harness == "pi" and settings.pi_model and settings.pace != "full":
                # pi's provider streams text, not tokens: nothing here can hold it token by token
                raise ApiError(
                    400,
                    "pi's own models stream text, not tokens: run them with pace full.",
                    "pi 自己的模型串流的是文字而不是 token：請以 pace full 執行。",
                )
            if attaching and not harness_class(settings.harness).takes_attachments:
                raise ApiError(
                    400,
                    "Attachments go to agentloop's own loop: run them with harness simple.",
                    "附件只交給 agentloop 自己的迴圈：請以 harness simple 執行。",
                )
            conversation = self.conversations.get(conversation_id) if conversation_id else None
            self.starting = True
            return settings, conversation

    @staticmethod
    def _checked(files: list[tuple[str, bytes]]) -> list[media.Checked]:
        """Every file checked (decoded once, within media.py's caps) before a conversation is made or touched."""
        try:
            return media.check_all(list(files))
        except media.MediaError as e:
            raise ApiError(400, e.en, e.zh) from e

    def _saved(self, checked: list[media.Checked], conversation) -> list[media.Attachment]:
        """The files saved in the conversation's /data and, for the media the model reads, its private folder."""
        readable = getattr(self.backend, "modalities", ())
        try:
            return media.save_checked(checked, conversation.files, conversation.own, readable)
        except media.MediaError as e:  # /data full: its quota
            raise ApiError(400, e.en, e.zh) from e

    def _begin(self, question, settings, forced, conversation, attachments) -> Run:
        """The run, made the one using the model; its forced text queued only now, when nothing can refuse it."""
        with self._lock:
            llm = (
                RunModel(self.backend, self.name, self._model_lock, self._text_lock)
                if self.backend
                else None  # pi's own model, with nothing loaded here
            )
            run = Run(
                llm, question, settings, self._run_ended, self.orphan_s, conversation, attachments
            )
            for text in forced or [] if self.backend else []:  # the queue is this run's alone
                self.backend.force(text)
            self.run = run
            self.runs[run.id] = run
            forget_old_runs(self.runs)
            return run

    def why_no_run(self) -> ApiError | None:
        """Why a run would be refused now (a run, a start or a load under way), or None: the guard asks this
        before it reads a large body, so a refused upload costs nothing."""
        with self._lock:
            try:
                self._refuse_if_busy("start a run", "開始執行")
            except ApiError as e:
                return e
        return None

    def _run_ended(self, run: Run) -> None:
        with self._lock:
            if self.run is run:
                self.run = None
                if self.backend:  # what the run did not reach is not the next run's
                    self.backend.clear_forced()

    def _refuse_if_busy(self, what_en: str, what_zh: str) -> None:
        if self.loading:
            raise ApiError(
                409,
                f"Cannot {what_en}: the model {self.load.model} is loading. Wait until "
                f"GET /api/status says loading: false.",
                f"無法{what_zh}：模型 {self.load.model} 正在載入，請等它載入完成。",
            )
        if self.starting:
            raise ApiError(
                409,
                f"Cannot {what_en}: a run is starting (its attachments are being checked). Try again in "
                "a moment.",
                f"無法{what_zh}：一個執行正在開始（正在檢查它的附件），請稍後再試。",
            )
        if self.run is not None:
            raise ApiError(
                409,
                f"Cannot {what_en}: run {self.run.id} is using the model (one run at a time, "
                f"for every tab). Stop it or wait for it to end; a run waiting for a permission "
                f"that nobody watches is stopped after {self.orphan_s:g} s.",
                f"無法{what_zh}：執行 {self.run.id} 正在使用模型（所有分頁一次只能有一個執行）。"
                f"請先停止它或等它結束。",
                {"active_run": self.run.id},
            )

    # -- a load -----------------------------------------------------------------------------------------------------

    def start_load(
        self,
        model: str,
        folders: bool = False,
        backend: str = "transformers",
        mtp: bool | None = None,
    ) -> LoadJob:
        """Begin loading `model` (a menu name or Hub id; with `folders`, also a folder) in a thread, on
        `backend`: a way of backends.py (transformers here, vLLM in Docker or from .venv-vllm), or
        "vllm" for the one offered (with VLLM_URL, a model that server serves, by its name there).
        `mtp`: the MTP switch of a vLLM server the page starts (None: as it is); VLLM_URL's server is
        not the page's to restart."""
        try:
            way = self.backends.resolve(backend)
        except Refused as e:
            raise ApiError(400, e.en, e.zh) from None
        served = way == URL_WAY
        if served and mtp is not None:
            raise ApiError(
                400,
                f"MTP on the vLLM server at {self.backends.vllm_url} is as it was started: the page "
                f"did not start it, so it cannot restart it with MTP switched. Load without mtp.",
                f"{self.backends.vllm_url} 的 vLLM 伺服器的 MTP 照它啟動時的設定：它不是這個頁面啟動的，"
                f"所以頁面無法切換 MTP 重新啟動它。請不帶 mtp 載入。",
            )
        try:
            ref, hub = (model, False) if served else paths.model_ref(model, folders=folders)
        except paths.ModelNotFound as e:
            raise ApiError(e.status, e.en, e.zh) from None
        with self._lock:
            self._refuse_if_busy("load a model", "載入模型")
            self.loading = True
            job = self.load = LoadJob(paths.display_name(ref) if not hub else model)
        job.start(ref, hub, self, way, served, mtp)
        return job

    def replace(
        self, name: str, ref: str, way: str = "transformers", say=lambda ev: None, mtp=None
    ):
        """Swap in the model at `ref` on `way` (loads.py calls this, `say` its stream) and return it: the
        old model goes first, so two never share the memory (after any forward pass still on it); a
        vLLM server this page started or uses in Docker goes with it, before the new one loads
        (backends.py)."""
        with self._model_lock:
            with self._lock:
                old, self.backend, self.name, self.specs = self.backend, None, None, None
                self.examples = None
            if old is not None:
                old.unload()
        backend = self.backends.open(way, name, ref, say, mtp)
        specs, examples = facts.model_specs(backend), menu.model_examples(ref)
        with self._lock:
            self.backend, self.name, self.specs, self.error = backend, name, specs, None
            self.examples = examples
            self.loading = False
        return backend

    def load_failed(self, message: dict) -> None:
        with self._lock:
            self.loading = False
            if self.backend is None:
                self.error = message


def forget_old_runs(
    runs: OrderedDict[str, Run], keep_runs: int = KEEP_RUNS, keep_events: int = KEEP_EVENTS
) -> None:
    """Drop the oldest runs until keep_runs are left and they hold keep_events events at most (the newest run,
    the one starting, always stays)."""

    def events() -> int:
        return sum(len(run.log.events) for run in runs.values())

    while len(runs) > keep_runs or (len(runs) > 1 and events() > keep_events):
        runs.popitem(last=False)


def harness_tools() -> list[dict]:
    """The tools the harness can give the model, for the live form's checklist (tools.py's registry)."""
    return [{"name": t.name, "description": t.description} for t in TOOLS.values()]


def pi_own_tools() -> list[dict]:
    """pi's own tools, for the live form's checklist when pi runs with its own tools (what each does
    is in pi's system prompt, which pi writes; here only their names)."""
    return [{"name": n, "description": ""} for n in PI_OWN_TOOLS]


def defaults(backend) -> dict:
    """What a run gets for a field not sent: run_settings with nothing given; with no model loaded, what a run
    of pi's own model gets (Sampling()'s), so a live form still starts with the book's tools ticked."""
    d = asdict(run_settings(backend.sampling_defaults if backend else Sampling()))
    d["tools"] = list(d["tools"])
    return d


def media_status(backend) -> dict:
    """The kinds of attachment the model reads, and for each other kind why not ({en, zh}): the panel's
    attach control and a run's Model tab say it, and such a file is kept as a plain file for run_python. With
    them, one file's size limit, and the harnesses that take attachments (pi does not yet): the attach control
    says so when the form's harness is another, and sends no files with its question."""
    read = facts.media_read(backend) if backend else {"reads": [], "refused": {}}
    return {**read, "max_bytes": media.MAX_BYTES, "harnesses": attaching_harnesses()}


def attaching_harnesses() -> list[str]:
    """The names of HARNESSES whose runs take attachments (their class's takes_attachments)."""
    return [name for name in HARNESSES if harness_class(name).takes_attachments]
