"""The demo server's routes: the built book and the API its panels call, on one origin (`agentloop serve`).

The API runs agentloop's own code: a run is SimpleHarness (or PiHarness) streaming the events of agentloop/events.py as
Server-Sent Events, exactly as a recording saves them; the smaller calls show one stage alone. The contract with
the panels is docs/assets/README-panel.md; what keeps other web pages out is guard.py. This file holds routes
only: each is a few lines over model.py (the model, its runs and loads) or stages.py.

How to add an endpoint:
1. its request and answer shapes in schemas.py (Strict for requests: unknown fields are refused);
2. a function here, decorated with its method and path under /api, `dependencies=tokened` on a POST, and
   `responses=ERRORS`; the function's name is the endpoint's name in the panels' API table;
3. its work in stages.py (a stage of the loop: `with current.text() as backend:`, then
   `with current.forward(backend):` for a forward pass) or in model.py (the model, runs, loads);
4. a line in docs/assets/README-panel.md. The panels need no copy of the path: every page the server serves
   carries the API table (book.api_table, from these routes) in its `agentloop-api` meta.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from fastapi import FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from fastapi.security import APIKeyHeader
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentloop import media
from agentloop.harnesses.pi.menu import PiMenu
from agentloop.sandbox import cleanup
from demo_server import media_preview, stages
from demo_server.book import Book, api_table
from demo_server.errors import ApiError, error_response
from demo_server.guard import MAX_BODY, TOKEN_HEADER, Guard, allowed_hosts
from demo_server.model import CurrentModel
from demo_server.runs import ORPHAN_S
from demo_server.schemas import (
    Decision,
    Empty,
    ErrorBody,
    LoadRequest,
    LoadStarted,
    MediaPreview,
    MediaPreviewRequest,
    ModelMenu,
    NextStage,
    NextToken,
    NextTokenRequest,
    Ok,
    PiModels,
    Rendered,
    RenderRequest,
    RunRequest,
    RunStarted,
    Status,
    Tokenized,
    TokenizeRequest,
)
from demo_server.zh_hans import JSONResponse

DESCRIPTION = f"""
The API behind the book's live panels. Everything is on the page's own origin.

**Security.** Requests are answered only for this server's own Host (127.0.0.1, localhost or [::1] with its port),
and refused with an Origin header from anywhere else. Every POST needs the header `{TOKEN_HEADER}`: the
per-start token, found only in the `<meta name="agentloop-token">` tag of the HTML pages this server serves
(401 when missing, 403 when wrong).

**The API table.** Every HTML page this server serves also carries `<meta name="agentloop-api" content="…">`:
JSON, `{{route_name: [METHOD, path_template]}}` for every route under /api, built from these routes (the name is
the endpoint function's, the path as below, e.g. `"run_events": ["GET", "/api/runs/{{run_id}}/events"]`). A page
without these metas is the static book, which replays only and sends no request to /api. POST bodies are JSON of at most {MAX_BODY // 1024} KiB (413 when larger).
A run's or a preview's body may be larger, to carry attachments; one such body is read at a time (503 for another
meanwhile), and a run's is refused with 409 before it is read while the model is busy.

**One model, one run.** One model serves every tab. A run, or a model load, while a run is using the model is
refused with 409 (not queued); so is a run while a model loads.

**Pace.** A run's `settings.pace` is `full`, `slow` (a short wait before each token) or `step`: before the
prefill, each token, the parse and each approved call the run sends a `paused` event and waits for
POST /api/runs/{{run_id}}/next. Stop and the time limit end a wait at once; the waits are left out of the
model's timings and count toward the time limit.

**Errors** answer a non-2xx status with an `error` event as the body: `{{"type": "error", "message": {{"en", "zh"}}}}`.

**Chinese**: every `{{"en", "zh"}}` text in an answer or an event (errors, descriptions, notes) also carries
`"zh-Hans"`, its zh (Traditional) converted to Simplified Chinese by the server (demo_server/zh_hans.py).

**Event streams** (`text/event-stream`): one `data:` line of JSON per event, no `event:` field, from the first
event even for a late reader, ending after the last (`run_end`; for a load, `ready` or `error`).

**Forced continuations** (`forced` in POST /api/runs) are a teaching and testing aid, accepted only when the
server was started with `AGENTLOOP_ALLOW_FORCED=1`.
"""

ERRORS = {status: {"model": ErrorBody} for status in (401, 403, 404, 409, 413, 415, 422, 503)}
STREAM = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "Server-Sent Events, one JSON event each.",
    }
}
token_scheme = APIKeyHeader(
    name=TOKEN_HEADER,
    auto_error=False,
    description="The per-start token from the served pages' agentloop-token meta tag.",
)


def needs_token(_: str | None = Security(token_scheme)) -> None:
    """Documents the token in OpenAPI; Guard has already checked it on every POST."""


def create_app(
    model: str | None = None,
    site_dir: str | Path = "site",
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    allow_forced: bool | None = None,
    device: str | None = None,
    token: str | None = None,
    max_body: int = MAX_BODY,
    orphan_s: float = ORPHAN_S,
) -> FastAPI:
    """The app, with `model` loading in the background (default: the embedded tiny model).

    `host` and `port` are where it is served: the Host header must name them (port None: any port on loopback,
    for an app mounted without a known port). `allow_forced` (default: AGENTLOOP_ALLOW_FORCED=1) accepts forced
    continuations in POST /api/runs. `token` is generated per start unless given (tests)."""
    if allow_forced is None:
        allow_forced = os.environ.get("AGENTLOOP_ALLOW_FORCED") == "1"
    token = token or secrets.token_urlsafe(32)
    cleanup.sweep()  # the run folders, sandbox stages and cgroups of a server that was killed
    current = CurrentModel(device=device, orphan_s=orphan_s)
    pi_menu = PiMenu()  # pi's own models, kept a minute: each ask starts a pi

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        # The conversations' folders go with the server that made them (as root, tmpfs mounts): a server
        # killed before it gets here leaves them to the next start's sweep.
        current.conversations.close()

    app = FastAPI(
        lifespan=lifespan,
        title="agentloop demo server",
        version="1",
        description=DESCRIPTION,
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        # Each {en, zh} text of an answer gets its zh-Hans (demo_server/zh_hans.py), here and in the streams.
        default_response_class=JSONResponse,
    )
    app.state.current, app.state.token = current, token

    def refuse_run():
        """The answer a run would get now, which the guard sends before it reads a large body."""
        refusal = current.why_no_run()
        return refusal.response() if refusal else None

    app.add_middleware(
        Guard,
        token=token,
        hosts=allowed_hosts(host, port),
        max_body=max_body,
        refuse_run=refuse_run,
    )
    install_error_handlers(app)
    tokened = [Security(needs_token)]

    @app.get(
        "/api/status", response_model=Status, summary="Is there a server, and with which model"
    )
    def status():
        return current.status()

    @app.get("/api/models", response_model=ModelMenu, summary="The model menu")
    def models():
        models, notice = current.menu()
        return {"models": models, "current": current.status()["model"], "notice": notice}

    @app.post(
        "/api/models/load",
        response_model=LoadStarted,
        status_code=202,
        dependencies=tokened,
        responses=ERRORS,
        summary="Load or switch the model, for every tab (progress: the load stream)",
    )
    def load(req: LoadRequest):
        job = current.start_load(req.model, backend=req.backend, mtp=req.mtp)
        return {"ok": True, "load_id": job.id, "model": job.model}

    @app.get(
        "/api/models/load/events",
        responses={**STREAM, 404: {"model": ErrorBody}},
        summary="The latest load's progress: load_start, family, download…, loading, then ready or error",
    )
    def load_events():
        job = current.load
        if job is None:
            raise ApiError(404, "No model has been loaded yet.", "還沒有載入過模型。")
        return event_stream(job.log)

    @app.get("/api/pi/models", response_model=PiModels, summary="The models pi has credentials for")
    def pi_models():
        return pi_menu.models()

    @app.post(
        "/api/runs",
        response_model=RunStarted,
        dependencies=tokened,
        responses=ERRORS,
        summary="Start a run (refused with 409 while another run or a load is under way)",
    )
    def start_run(req: RunRequest):
        if req.forced and not allow_forced:
            raise ApiError(
                403,
                "Forced continuations are off: start the server with AGENTLOOP_ALLOW_FORCED=1.",
                "強制續寫功能未開啟：請以 AGENTLOOP_ALLOW_FORCED=1 啟動伺服器。",
            )
        run = current.start_run(
            req.question,
            req.settings.model_dump(exclude_none=True),
            req.forced,
            req.conversation_id,
            [(a.name, a.decoded()) for a in req.attachments],
        )
        attached = [media.summary(a) for a in run.attachments]
        return {"run_id": run.id, "conversation_id": run.conversation.id, "attachments": attached}

    @app.get(
        "/api/runs/{run_id}/events",
        responses={**STREAM, 404: {"model": ErrorBody}},
        summary="The run's events from run_start to run_end (a late reader gets them all)",
    )
    def run_events(run_id: str):
        return event_stream(current.get_run(run_id).log)

    @app.post(
        "/api/runs/{run_id}/decision",
        response_model=Ok,
        dependencies=tokened,
        responses=ERRORS,
        summary="Approve or deny the tool call a permission event asks about",
    )
    def decision(run_id: str, req: Decision):
        run = current.get_run(run_id)
        if run.ended:
            raise ApiError(409, "The run has ended.", "這個執行已經結束。")
        if not run.decide(req.call_id, req.approve):
            raise ApiError(
                409,
                f"No permission for call {req.call_id!r} is waiting in this run.",
                f"這個執行中沒有等待決定的呼叫 {req.call_id!r}。",
            )
        return {"ok": True}

    @app.post(
        "/api/runs/{run_id}/stop",
        response_model=Ok,
        dependencies=tokened,
        responses=ERRORS,
        summary="Stop the run (it ends with run_end, stop_reason user_stopped); a finished run stays as it is",
    )
    def stop(run_id: str, req: Empty | None = None):
        current.get_run(run_id).stop()
        return {"ok": True}

    @app.post(
        "/api/runs/{run_id}/next",
        response_model=Ok,
        dependencies=tokened,
        responses=ERRORS,
        summary="Go on past the stage a step-by-step run waits before (its `paused` event), at `pace` "
        "from here on when given",
    )
    def next_stage(run_id: str, req: NextStage | None = None):
        run = current.get_run(run_id)
        if run.ended:
            raise ApiError(409, "The run has ended.", "這個執行已經結束。")
        if not run.next(req.pace if req else None):
            raise ApiError(
                409,
                "This run is not paused: Next goes on from a `paused` event (pace step).",
                "這個執行沒有暫停：「下一步」只在 `paused` 事件之後才能繼續（pace step）。",
            )
        return {"ok": True}

    @app.post(
        "/api/media/expand",
        response_model=MediaPreview,
        dependencies=tokened,
        responses=ERRORS,
        summary="What a file becomes in each family's prompt (chapter 7): placeholders expanded, no run",
    )
    def media_expand(req: MediaPreviewRequest):
        try:
            return media_preview.preview(req.attachment.name, req.attachment.decoded())
        except media.MediaError as e:
            raise ApiError(400, e.en, e.zh) from e

    @app.post(
        "/api/render",
        response_model=Rendered,
        dependencies=tokened,
        responses=ERRORS,
        summary="A conversation as one prompt string, by the checkpoint's chat template",
    )
    def render(req: RenderRequest):
        return stages.render(
            current,
            [m.model_dump() for m in req.messages],
            req.tools,
            req.thinking,
            req.generation_prompt,
        )

    @app.post(
        "/api/tokenize",
        response_model=Tokenized,
        dependencies=tokened,
        responses=ERRORS,
        summary="Text as the model's tokens",
    )
    def tokenize(req: TokenizeRequest):
        return stages.tokenize(current, req.text)

    @app.post(
        "/api/next-token",
        response_model=NextToken,
        dependencies=tokened,
        responses=ERRORS,
        summary="The next token's distribution, and what temperature, top-k and top-p keep of it",
    )
    def next_token(req: NextTokenRequest):
        messages = [m.model_dump() for m in req.messages] if req.messages is not None else None
        return stages.next_token(
            current,
            req.prompt,
            messages,
            req.tools,
            req.thinking,
            req.temperature,
            req.top_p,
            req.top_k,
            req.top_n,
        )

    @app.api_route("/{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
    def page(path: str):
        if path == "api" or path.startswith("api/"):
            raise ApiError(404, f"There is no API endpoint /{path}.", f"沒有 /{path} 這個 API。")
        return book.response(path)

    book = Book(site_dir, token, api_table(app))  # after every route: the table lists them all
    start_model(current, model)
    return app


def start_model(current: CurrentModel, model: str | None) -> None:
    """Begin loading the first model: a name from the menu (None: paths.DEFAULT_MODEL), a Hub id, or (from the
    command line) any folder. A vLLM container of this project already up (another server's, `agentloop vllm
    up`'s, this one's before a restart) is followed when no model is named: its model, on it."""
    following = current.backends.running_container() if model is None else None
    try:
        if following is not None:
            current.start_load(following, backend="vllm-docker")
            return
        current.start_load(model if model is None else str(model), folders=True)
    except ApiError as e:
        # The server still serves the book; the panels replay until a model is loaded
        current.error = {"en": e.en, "zh": e.zh}


def event_stream(log) -> StreamingResponse:
    return StreamingResponse(
        log.stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# pydantic's error types (the ones these schemas can raise) in Chinese; its own messages are English only.
PROBLEMS_ZH = {
    "missing": "缺少此欄位",
    "extra_forbidden": "不接受此欄位",
    "json_invalid": "不是有效的 JSON",
    "model_type": "須為 JSON 物件",
    "model_attributes_type": "須為 JSON 物件",
    "dict_type": "須為 JSON 物件",
    "list_type": "須為清單",
    "string_type": "須為字串",
    "bool_type": "須為 true 或 false",
    "int_type": "須為整數",
    "float_type": "須為數字",
    "finite_number": "須為有限的數字",
    "literal_error": "須為其中之一：{expected}",
    "enum": "須為其中之一：{expected}",
    "string_pattern_mismatch": "格式不符",
    "string_too_short": "太短（至少 {min_length} 個字元）",
    "string_too_long": "太長（最多 {max_length} 個字元）",
    "too_short": "太少（至少 {min_length} 項）",
    "too_long": "太多（最多 {max_length} 項）",
    "greater_than": "須大於 {gt}",
    "greater_than_equal": "須大於或等於 {ge}",
    "less_than": "須小於 {lt}",
    "less_than_equal": "須小於或等於 {le}",
}


def problem_zh(err: dict) -> str:
    """One validation problem in Chinese: its type's sentence with pydantic's numbers filled in; pydantic's
    English message for a type not listed (a custom check's own, say)."""
    template = PROBLEMS_ZH.get(err.get("type", ""))
    try:
        return template.format(**err.get("ctx", {})) if template else err.get("msg", "")
    except (KeyError, IndexError):
        return err.get("msg", "")


def install_error_handlers(app: FastAPI) -> None:
    """Every refusal and failure answers an `error` event, whose message names what is wrong."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        return e.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError):
        problems = []
        for err in e.errors():
            where = ".".join(str(part) for part in err.get("loc", ()) if part != "body") or "body"
            problems.append(
                {
                    "loc": where,
                    "msg": err.get("msg", ""),
                    "msg_zh": problem_zh(err),
                    "type": err.get("type", ""),
                }
            )
        more = "; …" if len(problems) > 6 else ""
        en = "; ".join(f"{p['loc']}: {p['msg']}" for p in problems[:6]) + more
        zh = "；".join(f"{p['loc']}：{p['msg_zh']}" for p in problems[:6]) + more
        return error_response(422, f"The request is not valid: {en}", f"請求無效：{zh}", problems)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException):
        text = e.detail if isinstance(e.detail, str) else str(e.detail)
        return error_response(
            e.status_code,
            f"{text} ({request.method} {request.url.path})",
            f"{text}（{request.method} {request.url.path}）",
            headers=getattr(e, "headers", None),
        )

    @app.exception_handler(Exception)
    async def failed(request: Request, e: Exception):
        return error_response(
            500,
            f"The server failed: {type(e).__name__}: {e}",
            f"伺服器發生錯誤：{type(e).__name__}: {e}",
        )
