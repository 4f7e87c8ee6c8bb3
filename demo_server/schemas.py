"""The API's request and answer shapes, with the limits every field is held to (FastAPI publishes them as OpenAPI)."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from agentloop import media
from agentloop.harnesses import HARNESSES
from agentloop.harnesses.settings import PACES, PI_TOOLS, RunSettings, checked_tools
from agentloop.model_backends import BACKENDS
from demo_server.backends import URL_WAY, WAYS
from demo_server.errors import ApiError

Text = Annotated[str, StringConstraints(max_length=32_000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=64)]
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class Strict(BaseModel):
    """A request's shape, read strictly: no unknown fields, and no "yes" for true or "3" for 3 (pydantic's lax
    mode would convert them); a script that sends them has a bug, and the 422 names the field. Integers are still
    taken where a float is asked for, as JSON has one kind of number."""

    model_config = ConfigDict(extra="forbid", strict=True)


def known_tools(names: list[str] | None) -> list[str] | None:
    checked_tools(names or [])  # the one check: ValueError naming the tools there are
    return names


# -- runs -----------------------------------------------------------------------------------------------------------


# A field left out of a run's settings gets what run_settings gives it: RunSettings' own default, published
# here as the field's default; temperature, top_p and top_k have none here, as they come from the checkpoint.
DEFAULT = RunSettings()
RECOMMENDED = (
    "Left out (or null): the checkpoint's recommended sampling (GET /api/status: `defaults`)."
)


class RunSettingsIn(Strict):
    """agentloop's RunSettings (agentloop/harnesses/simple_harness.py), through run_settings: a field left out or
    null gets RunSettings' default (shown as the field's default), except temperature, top_p and top_k, which
    get the loaded checkpoint's recommended sampling. GET /api/status's `defaults` lists what a run gets."""

    max_steps: int | None = Field(
        DEFAULT.max_steps, ge=1, le=20, description="Steps (model turns) at most."
    )
    max_new_tokens: int | None = Field(
        DEFAULT.max_new_tokens, ge=1, le=8192, description="Tokens per step at most."
    )
    temperature: float | None = Field(
        None, ge=0, le=5, allow_inf_nan=False, description="0 is greedy decoding. " + RECOMMENDED
    )
    top_p: float | None = Field(None, ge=0, le=1, allow_inf_nan=False, description=RECOMMENDED)
    top_k: int | None = Field(None, ge=0, le=1_000_000, description="0 is no limit. " + RECOMMENDED)
    thinking: bool | None = DEFAULT.thinking
    use_tools: bool | None = DEFAULT.use_tools
    tools: list[ToolName] | None = Field(
        list(DEFAULT.tools), max_length=16, description="The tools the model sees."
    )
    auto_approve: bool | None = Field(
        DEFAULT.auto_approve, description="Approve every tool call without asking the reader."
    )
    max_format_errors: int | None = Field(DEFAULT.max_format_errors, ge=1, le=10)
    time_limit_s: float | None = Field(DEFAULT.time_limit_s, gt=0, le=3600, allow_inf_nan=False)
    harness: Literal[tuple(HARNESSES)] | None = Field(  # type: ignore[valid-type]
        DEFAULT.harness,
        description="The loop that runs the question, a name of agentloop's HARNESSES: agentloop's own "
        "(simple) or the pi coding agent (pi).",
    )
    pi_model: (
        Annotated[str, StringConstraints(max_length=200, pattern=r"^([\w.-]+/[\w.:/@-]+)?$")] | None
    ) = Field(
        DEFAULT.pi_model,
        description="With harness pi: one of pi's own models, provider/id (GET /api/pi/models); empty or "
        "absent: this page's model.",
    )
    pi_tools: Literal[PI_TOOLS] | None = Field(  # type: ignore[valid-type]
        DEFAULT.pi_tools,
        description="With harness pi: what pi gives the model. pi: its own system prompt and tools "
        "(read, bash, edit, write), each run in the sandbox over /data; book: agentloop's system "
        "prompt and tools (settings.tools), as the built-in harness gives them.",
    )
    mtp: bool | None = Field(
        DEFAULT.mtp,
        description="Drafted decoding: a drafter guesses, one forward pass checks several "
        "tokens (models with a drafter only: Gemma 4).",
    )
    seed: int | None = Field(
        DEFAULT.seed,
        ge=0,
        le=2**63 - 1,
        description="The sampler's seed: a sampled run is then the same run every time (null: fresh draws).",
    )
    pace: Literal[PACES] | None = Field(  # type: ignore[valid-type]
        DEFAULT.pace,
        description="How fast the run goes: full; slow (a short wait before each token); step (before "
        "the prefill, each token, the parse and each approved call the run sends `paused` and waits for "
        "POST /api/runs/{run_id}/next). The waits are left out of the timings. Not with pi_model (400).",
    )

    @field_validator("tools")
    @classmethod
    def check_tools(cls, names):
        return known_tools(names)


class AttachmentIn(Strict):
    """A file attached to the question: its name and its bytes as base64. Its kind is read from the bytes."""

    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    data: Annotated[str, StringConstraints(min_length=0, max_length=media.MAX_BYTES * 4 // 3 + 4)]

    def decoded(self) -> bytes:
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError) as e:
            raise ApiError(
                400,
                f"Attachment {self.name}: its data is not base64 ({e}).",
                f"附件 {self.name}：資料不是 base64（{e}）。",
            ) from e


class RunRequest(Strict):
    question: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8000)
    ]
    settings: RunSettingsIn = Field(default_factory=RunSettingsIn)
    forced: list[Annotated[str, StringConstraints(max_length=8000)]] | None = Field(
        None,
        max_length=16,
        description="Teaching and testing aid, accepted only when the server was started with "
        "AGENTLOOP_ALLOW_FORCED=1 (create_app(allow_forced=True)); refused with 403 otherwise. The i-th "
        "string is written as the model's output in the i-th step instead of sampling, while the model "
        "still scores every token (its token events carry `forced: true`). Steps after the last string "
        "are sampled. The book's recordings use it to show a tool call from a model too small to make one.",
    )
    conversation_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{12}$")] | None = Field(
        None,
        description="Continue this conversation (its messages and its /data folder), as a follow-up "
        "question; left out: a new conversation. 410 when it has expired, 404 when unknown.",
    )
    attachments: list[AttachmentIn] = Field(
        default_factory=list,
        max_length=4,
        description="Files for the question (chapter 7), saved in the conversation's /data. An image, sound "
        "or video the model reads becomes its placeholder tokens, decoded from the server's own copy; anything "
        "else is a plain file. A file that is not what its name says, does not decode, or is a video past "
        f"the caps ({media.VIDEO_FRAMES:,} frames, {media.VIDEO_PIXELS / 1e9:.1f} G pixels, "
        f"{media.MAX_SECONDS} s), or a /data too full to hold them, is refused (400) and none is saved.",
    )


class MediaPreviewRequest(Strict):
    attachment: AttachmentIn


class MediaPreview(BaseModel):
    name: str
    kind: Literal["image", "audio", "video", "file"]
    frames: list[float] | None = Field(None, description="A video: the time of each frame kept.")
    families: dict[str, dict[str, Any]] = Field(
        description="{family: {model, media_tokens, n_tokens, tokens: [[piece, count], …]} or "
        "{model, refused: {en, zh}}}: the user turn holding the file, as that family's model reads it; "
        "a placeholder repeated is one [piece, count]."
    )


class AttachedFile(BaseModel):
    name: str = Field(description="Its name in /data (made unique there).")
    kind: Literal["image", "audio", "video", "file"]
    why_plain: dict[str, str] | None = Field(
        None,
        description="{en, zh}: why a medium is kept as a plain file (the model cannot read it).",
    )
    frames: list[float] | None = Field(
        None, description="A video: the time in seconds of each frame kept for the model."
    )


class PiModels(BaseModel):
    models: list[dict[str, Any]] = Field(
        description="[{id: provider/id, name, provider, reasoning, input, cost}]"
    )
    message: dict[str, str] | None = Field(
        description="{en, zh} when pi has no model: it has no credentials."
    )


class RunStarted(BaseModel):
    run_id: str
    attachments: list[AttachedFile] = Field(default_factory=list)
    conversation_id: str = Field(
        description="The conversation this run continues or began: send it with the "
        "next question to follow up."
    )


class Decision(Strict):
    call_id: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    approve: bool


class Empty(Strict):
    pass


class NextStage(Strict):
    pace: Literal[PACES] | None = Field(  # type: ignore[valid-type]
        None,
        description="The pace from here on (full: no more pauses); left out: the run's pace as it is.",
    )


class Ok(BaseModel):
    ok: bool = True


# -- the model ------------------------------------------------------------------------------------------------------


class LoadRequest(Strict):
    model: Annotated[str, StringConstraints(min_length=1, max_length=200)] = Field(
        description="A checkpoint in models/ by folder name (tiny-qwen3_5), or a Hugging Face id (Qwen/Qwen3.5-0.8B)."
    )
    backend: Literal[(*BACKENDS, *WAYS, URL_WAY)] = Field(  # type: ignore[valid-type]
        "transformers",
        description="What runs it (chapter 11): transformers in the demo server, vllm-docker (vLLM in "
        "Docker), vllm-local (vLLM from .venv-vllm), or vllm: the vLLM offered (VLLM_URL's server, else "
        "Docker, else .venv-vllm). A way status.ways does not offer is refused (400).",
    )
    mtp: bool | None = Field(
        None,
        description="The MTP switch of a vLLM server the page starts (status.mtp_server.switchable): "
        "the server is started, or restarted, with speculative decoding where the model has a "
        "drafter or an MTP layer and the platform drafts. null: as it is. Refused (400) with "
        "VLLM_URL, whose server the page did not start; on transformers MTP is each run's.",
    )


class LoadStarted(BaseModel):
    ok: bool = True
    load_id: str
    model: str


class ModelEntry(BaseModel):
    id: str
    kind: Literal["tiny", "trained", "real", "served"]
    family: str | None = Field(description="null for a served model the book cannot run.")
    downloaded: bool
    bytes: int | None = Field(description="Bytes on disk; null when not downloaded.")
    parameters: int | None = Field(
        description="From the safetensors headers; null when not downloaded."
    )
    size: str | None = Field(description="The model's nominal size, for the real ones.")
    description: dict[str, str] = Field(description="What it is, said plainly: {en, zh}.")
    default: bool = Field(
        description="The model `agentloop run` uses when none is named (listed first)."
    )
    current: bool
    backends: list[str] = Field(
        description="The ways that can run it here (status.ways' ids; vllm-url for a model the server "
        "at VLLM_URL serves; none for one the book cannot run)."
    )
    supported: bool = Field(
        True, description="False: the server at VLLM_URL serves it, the book cannot run it."
    )
    why: dict[str, str] | None = Field(None, description="Why it cannot be run, {en, zh}.")


class ModelMenu(BaseModel):
    models: list[ModelEntry]
    current: str | None
    notice: dict[str, str] | None = Field(
        None,
        description="With VLLM_URL, when that server does not answer: a sentence {en, zh} for the menu; "
        "the other entries stay loadable.",
    )


class ToolInfo(BaseModel):
    name: str
    description: str


class Status(BaseModel):
    ok: bool = Field(
        description="A model is loaded or loading. False: the panels replay their recordings."
    )
    model: str | None
    family: str | None
    harness: str
    harnesses: list[str] = Field(
        description="The loops a run may ask for (settings.harness): agentloop's HARNESSES registry."
    )
    backend: str = Field(description="What runs the model for every tab: transformers or vllm.")
    way: str = Field(
        "transformers",
        description="How: transformers, vllm-docker, vllm-local, or vllm-url (the server at VLLM_URL).",
    )
    ways: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The model menu's 'What runs the model': [{id, offered, says: {en, zh}}], what Load "
        "starts on each way or why it is not offered here; empty with VLLM_URL (no choice).",
    )
    where: str | None = Field(
        description="The vLLM server's URL; null when the model runs in the demo server."
    )
    device: str | None
    dtype: str | None
    precision: str | None = Field(
        None,
        description="Why the weights are in that dtype, a key of agentloop/model_backends/precision.py's WHY "
        "(gpu, cpu_bfloat16, cpu_float32, tiny, asked); null with no model loaded or on a vLLM server.",
    )
    busy: bool = Field(
        description="A run is using the model, or a run's attachments are being checked for it (a new "
        "run or a model switch is refused)."
    )
    loading: bool
    loading_model: str | None
    defaults: dict[str, Any] | None = Field(
        description="RunSettings' defaults, with the checkpoint's sampling (with no model loaded, "
        "RunSettings' own: what a run of pi's own model gets)."
    )
    tools: list[ToolInfo] = Field(
        description="The tools the harness can give the model (settings.tools "
        "picks from them; defaults.tools is the pick when none is sent)."
    )
    pi_tools: list[ToolInfo] = Field(
        default_factory=list,
        description="pi's own tools, which pi gives the model with settings.pi_tools pi (each run "
        "in the sandbox); settings.tools picks from them too, pi's read, bash, edit and write when "
        "it names none.",
    )
    mtp: bool = Field(
        False,
        description="The model has an MTP drafter here (transformers), so a run may ask for mtp.",
    )
    mtp_server: dict[str, Any] | None = Field(
        None,
        description="On a vLLM server, MTP as the server runs it: {on: true|false|null (unknown: "
        "VLLM_URL's, as it was started), switchable: whether a load with mtp restarts it (a server "
        "the page started, a model that can draft, a platform that drafts), says: {en, zh}}; a "
        "run's mtp: true is then refused (400). Null on transformers.",
    )
    specs: dict[str, Any] | None = Field(
        description="From config.json (agentloop.model_backends.facts.model_specs, which run_start "
        "carries too): layers and their types, hidden size, heads, kv heads, vocabulary, context length (a vLLM "
        "server's --max-model-len), parameters (null on vLLM)."
    )
    examples: dict[str, Any] | None = Field(
        None,
        description="The model folder's examples.json: {note: {en, zh}, questions: [{kind, en, "
        "zh?}]}, what the panel says of the model and the questions it offers; null without one.",
    )
    media: dict[str, Any] = Field(
        default_factory=dict,
        description="Attachments (chapter 7): {reads: the kinds the model reads, refused: {kind: {en, zh}} "
        "why it does not read the others, max_bytes: one file's limit, harnesses: the harnesses that take "
        "attachments (settings.harness; another refuses a run with files)}.",
    )
    error: dict[str, str] | None = Field(
        description="Why the last load failed, while no model is loaded."
    )


# -- one stage alone -------------------------------------------------------------------------------------------------


class ToolCallFunction(Strict):
    name: Name
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallIn(Strict):
    type: Literal["function"] = "function"
    function: ToolCallFunction


class Message(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: Text = ""
    reasoning_content: Text | None = Field(
        None, description="The model's thinking (assistant messages)."
    )
    tool_calls: list[ToolCallIn] | None = Field(None, max_length=8)
    name: Name | None = None
    tool_call_id: Name | None = None


class RenderRequest(Strict):
    messages: list[Message] = Field(min_length=1, max_length=64)
    tools: list[ToolName] | None = Field(
        None, max_length=16, description="Tool names (their schemas go in)."
    )
    thinking: bool = False
    generation_prompt: bool = True

    @field_validator("tools")
    @classmethod
    def check_tools(cls, names):
        return known_tools(names)


class Rendered(BaseModel):
    prompt: str
    n_tokens: int


class TokenizeRequest(Strict):
    text: Text


class Tokenized(BaseModel):
    ids: list[int]
    pieces: list[str] = Field(description="Each token as the vocabulary spells it.")
    texts: list[str] = Field(
        description="The text each token completes ('' while a character is split)."
    )
    special: list[bool]
    n_tokens: int
    family: str = Field(
        description="The family whose vocabulary spells the pieces (as /api/status names it): how a piece "
        "reads as bytes."
    )


class NextTokenRequest(Strict):
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=32_000)] | None = Field(
        None, description="The prompt as the model reads it. Give this or messages."
    )
    messages: list[Message] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="A conversation, rendered with the chat template first.",
    )
    tools: list[ToolName] | None = Field(None, max_length=16)
    thinking: bool = DEFAULT.thinking
    temperature: float | None = Field(
        None, ge=0, le=5, allow_inf_nan=False, description=RECOMMENDED
    )
    top_p: float | None = Field(None, ge=0, le=1, allow_inf_nan=False, description=RECOMMENDED)
    top_k: int | None = Field(None, ge=0, le=1_000_000, description=RECOMMENDED)
    top_n: int = Field(10, ge=1, le=50, description="How many of the most likely tokens to list.")

    @field_validator("tools")
    @classmethod
    def check_tools(cls, names):
        return known_tools(names)

    @model_validator(mode="after")
    def prompt_or_messages(self):
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt and messages")
        return self


class Candidate(BaseModel):
    rank: int
    id: int
    piece: str
    text: str
    p: float = Field(description="The model's own probability (softmax of the logits, T = 1).")
    logprob: float | None
    kept: bool = Field(description="Still a candidate after temperature, top-k and top-p.")
    p_kept: float = Field(description="Its probability under the settings (0 when cut).")


class Sampled(BaseModel):
    id: int
    piece: str
    text: str
    p: float
    rank: int
    p_sampled: float | None


class NextToken(BaseModel):
    prompt: str
    n_tokens: int
    settings: dict[str, float | int]
    kept: int = Field(description="How many tokens the settings keep as candidates.")
    vocabulary: int
    top: list[Candidate]
    sampled: Sampled = Field(description="One draw under the settings.")


class ErrorBody(BaseModel):
    type: Literal["error"] = "error"
    message: dict[str, str] = Field(description="{en, zh}")
    detail: Any = None
