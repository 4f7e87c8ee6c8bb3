"""SimpleHarness: the agent loop itself, one question at a time (chapter 1).

Each step renders the whole conversation into one string, has the model generate, and reads what it wrote. A
reply without a tool call is the final answer; a tool call is validated against the tool's schema, shown to the
reader for approval, run, and its result appended, and the loop goes round again. Every stage sends an event
(events.py), which is all the book's panels and the terminal ever see.

With attachments (media.py, chapter 7) the question is a list of content parts, and each step's prompt is
encoded with the conversation's media. Left out here: pi's loop (pi_harness.py, which shares this class's side
of the reader).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from agentloop import data_folder, events, media
from agentloop.model_backends import Backend
from agentloop.model_families import Sampling
from agentloop.tools import DEFAULT_TOOLS, TOOLS, Tool, ToolOutput, select, validate

SYSTEM_WITH_TOOLS = (
    "You are a helpful assistant. When a question needs computing, counting, converting or reading a "
    "file, call a tool, then answer with its result. The conversation's files are in /data."
)
SYSTEM_NO_TOOLS = "You are a helpful assistant. Answer briefly."
REPEATED_CALL = (
    "You already made this exact call; its result is above. Use it to answer, or make a different "
    "call."
)
DENIED = "The user denied this tool call. Do not run it again; answer without it or ask what to do."
DENIED_AGAIN = (
    "The user already denied this exact call; it was not run and there is no result. Answer without "
    "it, or make a different call."
)


@dataclass
class RunSettings:
    max_steps: int = 6
    max_new_tokens: int = 256  # per step
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    thinking: bool = False
    use_tools: bool = True
    tools: tuple[str, ...] = DEFAULT_TOOLS  # the tools the model sees (tools.py)
    auto_approve: bool = False
    max_format_errors: int = 3
    time_limit_s: float | None = 600.0
    mtp: bool = (
        False  # drafted decoding (chapter 10): the same tokens, fewer forward passes of the model
    )
    harness: str = (
        "simple"  # which loop runs the question: "simple" (this one) or "pi" (pi_harness.py)
    )
    pi_model: str = (
        ""  # PiHarness only: one of pi's own models as "provider/id"; "": this page's model
    )

    seed: int | None = (
        None  # the sampler's seed (chapter 9): a sampled run then replays as recorded
    )

    @property
    def sampling(self) -> Sampling:
        return Sampling(
            self.temperature, self.top_p, self.top_k, self.max_new_tokens, self.mtp, self.seed
        )


def run_settings(recommended: Sampling, **given) -> RunSettings:
    """A run's settings, the one merge every caller uses (the terminal, the demo server, its stage endpoints,
    the evaluation): RunSettings' defaults, then the checkpoint's recommended sampling, then what was given (a
    field given as None is left to the two before). An unknown tool name fails here, before anything runs."""
    settings = RunSettings(
        temperature=recommended.temperature, top_p=recommended.top_p, top_k=recommended.top_k
    )
    settings = replace(
        settings, **{name: value for name, value in given.items() if value is not None}
    )
    return replace(settings, tools=tuple(select(settings.tools)))


class SimpleHarness:
    def __init__(
        self,
        llm: Backend,
        history: list[dict],
        user_text: str,
        settings: RunSettings,
        emit: Callable[[dict], None],
        files: Path | None = None,
        attachments: Sequence[media.Attachment] = (),
    ):
        self.id = uuid.uuid4().hex[:12]
        self.llm = llm
        self.settings = settings
        # With attachments, the question is a list of parts: the media in order, then the text (media.py).
        question = media.user_content(user_text, list(attachments))
        self.messages = [*history, {"role": "user", "content": question}]
        # The conversation's folder, which run_python's sandbox sees as /data.
        self.files = files or data_folder.create()
        self.tools: dict[str, Tool] = (
            {n: t for n, t in TOOLS.items() if n in settings.tools} if settings.use_tools else {}
        )
        self._emit = emit
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._decisions: dict[str, bool] = {}
        self._decided = threading.Condition()
        # The call whose permission is asked and not yet answered, and since when: the one record of it.
        self.waiting_for: str | None = None
        self.waiting_since: float | None = None
        self.step = 0  # the step running now, so a failure can name it

    def run(self) -> None:
        # [quote:start]
        s = self.settings
        family = self.llm.family  # how this model writes its turns, thinking and tool calls
        tools = [t.schema() for t in self.tools.values()] or None  # for the chat template
        schemas = {
            t.name: t.parameters for t in self.tools.values()
        }  # for the parser: Qwen's values need types
        system = {"role": "system", "content": SYSTEM_WITH_TOOLS if tools else SYSTEM_NO_TOOLS}
        self.emit(
            "run_start",
            run_id=self.id,
            harness="simple",
            model=self.llm.model_id,
            family=family.key,
            settings=asdict(s),
            tools=list(self.tools),
            question=self.messages[-1]["content"],  # the reader's turn, drawn by a replay too
        )
        # [/quote:start]

        # [quote:setup]
        seen: dict[
            tuple[str, str], bool
        ] = {}  # each call answered so far -> approved, so a repeat is caught
        format_errors = 0
        prev_prompt = ""
        stop_reason, final = "max_steps", ""
        # [/quote:setup]
        # [quote:forget]
        self.llm.forget()  # nothing cached by another run: step 1 computes its whole prompt
        # [/quote:forget]
        # [quote:render]
        for step in range(1, s.max_steps + 1):
            self.step = step
            self.emit("step_start", step=step)
            prompt = self.llm.render([system, *self.messages], tools, s.thinking)
            encoded = self.llm.encode(prompt, media.parts(self.messages))
            # What this step added: everything after the part it shares with the last step's prompt. The
            # media sit in user messages, before that part, so in the expanded text it starts further on
            # by what their placeholders expanded into.
            expanded_by = len(encoded.text) - len(prompt)
            self.emit(
                "context",
                step=step,
                prompt=encoded.text,
                n_tokens=encoded.n_tokens,
                added_from=expanded_by + common_prefix(prompt, prev_prompt) if prev_prompt else 0,
                media_tokens=encoded.media_tokens,
                context_length=self.llm.context_length,
                roles=role_counts([system, *self.messages]),
                role_tokens=role_tokens(
                    self.llm, [system, *self.messages], tools, s.thinking, encoded
                ),
            )
            prev_prompt = prompt
            # [/quote:render]

            # [quote:generate]
            done: dict = {}
            for ev in self.llm.generate(encoded, s.sampling, self._should_stop):
                kind = ev.pop("type")
                if kind == "done":
                    done = ev
                else:
                    self.emit(kind, step=step, **ev)  # prefill and each token, as they come
            raw = done.pop("raw")
            self.emit("model_end", step=step, raw=raw, **done)
            if done["finish"] == "user_stopped":
                stop_reason = self._why_stopped()
                break
            # [/quote:generate]

            # [quote:parse]
            parsed = family.parse(
                raw, schemas, thinking_open=encoded.text.endswith(family.thought_prefix)
            )
            if parsed.error:  # shown to the model, which gets another try
                format_errors += 1
                self.emit(
                    "tool_call",
                    step=step,
                    call_id=f"{step}.0",
                    name=None,
                    args={},
                    error=parsed.error.message,
                )
                self.messages += [
                    {"role": "assistant", "content": parsed.content + parsed.error.text},
                    {
                        "role": "user",
                        "content": f"Your tool call could not be read. {parsed.error.message}",
                    },
                ]
                if format_errors >= s.max_format_errors:
                    stop_reason = "format_errors"
                    break
                continue
            if not parsed.tool_calls:  # a reply without a tool call is the final answer
                self.messages.append(
                    {
                        "role": "assistant",
                        "content": parsed.content,
                        family.thinking_key: parsed.thinking,
                    }
                )
                stop_reason, final = "final", parsed.content
                break
            # [/quote:parse]

            # [quote:tools]
            self.messages.append(
                {
                    "role": "assistant",
                    "content": parsed.content,
                    family.thinking_key: parsed.thinking,
                    "tool_calls": [
                        {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in parsed.tool_calls
                    ],
                }
            )
            for i, call in enumerate(parsed.tool_calls):
                call_id = f"{step}.{i}"
                tool, key = (
                    self.tools[call.name],
                    (call.name, json.dumps(call.arguments, sort_keys=True)),
                )
                error = validate(tool, call.arguments)
                self.emit(
                    "tool_call",
                    step=step,
                    call_id=call_id,
                    name=call.name,
                    args=call.arguments,
                    **({"error": error} if error else {}),
                )
                started = None
                if error:  # back to the model as an error result; nothing runs, nobody is asked
                    output = ToolOutput(f"Invalid arguments: {error}", True)
                elif key in seen:  # answered as it was the first time: ran (result above) or denied
                    output = ToolOutput(REPEATED_CALL if seen[key] else DENIED_AGAIN, True)
                else:
                    approved = self._ask(step, call_id)
                    if approved is None:  # stopped while waiting
                        stop_reason = self._why_stopped()
                        break
                    seen[key] = approved  # after the answer: a call never answered is asked again
                    started = time.perf_counter()
                    output = (
                        self._run_tool(tool, call.arguments)
                        if approved
                        else ToolOutput(DENIED, True)
                    )
                self._result(step, call_id, call.name, output, started)
            else:
                continue
            break  # stopped inside the calls
            # [/quote:tools]

        # [quote:end]
        self.emit(
            "run_end",
            stop_reason=stop_reason,
            final=final,
            steps=step,
            ms=round((time.perf_counter() - self._start) * 1000, 1),
        )
        # [/quote:end]

    # -- the reader's side ------------------------------------------------------------------------------------------

    def decide(self, call_id: str, approve: bool) -> bool:
        """The reader's answer to a permission event (from another thread); False, and nothing decided, when the
        loop is not waiting for that call."""
        with self._decided:
            if call_id != self.waiting_for:
                return False
            self.waiting_for = self.waiting_since = None  # one answer per call
            self._decisions[call_id] = approve
            self._decided.notify_all()
        return True

    def stop(self) -> None:
        """End the run from another thread: generation stops before its next token, a wait for permission at once."""
        self._stop.set()
        with self._decided:
            self._decided.notify_all()

    # -- the steps the loop reads as one line each --------------------------------------------------------------------

    def emit(self, kind: str, **fields) -> None:
        """Send an event, with the ms since the run started (replays keep the run's pace) and the line that
        sent it (the panels link an event to its source, live as in a replay)."""
        t_ms = round((time.perf_counter() - self._start) * 1000, 1)
        self._emit(events.make(kind, **fields, t_ms=t_ms, src=events.caller(skip=1)))

    def _should_stop(self) -> bool:
        return self._stop.is_set() or self._out_of_time()

    def _out_of_time(self) -> bool:
        limit = self.settings.time_limit_s
        return limit is not None and time.perf_counter() - self._start > limit

    def _time_left(self) -> float | None:
        """Seconds until the time limit (None: no limit), so a wait can end when the limit does."""
        limit = self.settings.time_limit_s
        return None if limit is None else max(0.0, limit - (time.perf_counter() - self._start))

    def _why_stopped(self) -> str:
        return "user_stopped" if self._stop.is_set() else "time_limit"

    def _ask(self, step: int, call_id: str) -> bool | None:
        """Send `permission` and wait for the reader's decision; None if the run is stopped meanwhile."""
        if not self.settings.auto_approve:
            self._waiting(call_id)  # before the event: a reader may answer as soon as it sees it
        self.emit("permission", step=step, call_id=call_id)
        if self.settings.auto_approve:
            approved, by = True, "auto"
        else:
            with self._decided:  # woken by decide() or stop(), or when the time limit runs out
                self._decided.wait_for(
                    lambda: call_id in self._decisions or self._should_stop(),
                    timeout=self._time_left(),
                )
            self._waiting(None)
            if call_id not in self._decisions:
                return None
            approved, by = self._decisions[call_id], "reader"
        self.emit("decision", step=step, call_id=call_id, approved=approved, by=by)
        return approved

    def _waiting(self, call_id: str | None) -> None:
        with self._decided:
            self.waiting_for = call_id
            self.waiting_since = time.monotonic() if call_id else None

    def _run_tool(self, tool: Tool, args: dict) -> ToolOutput:
        try:
            return tool.run(args, self.files)
        except (
            Exception
        ) as e:  # a broken tool is a result the model can read, not the end of the run
            return ToolOutput(f"The tool failed: {type(e).__name__}: {e}", True)

    def _result(
        self, step: int, call_id: str, name: str, output: ToolOutput, started: float | None = None
    ) -> None:
        """Send `tool_result` and append it to the conversation, where the model reads it next step."""
        ms = round((time.perf_counter() - started) * 1000, 1) if started is not None else 0.0
        self.emit(
            "tool_result",
            step=step,
            call_id=call_id,
            name=name,
            output=output.output,
            is_error=output.is_error,
            ms=ms,
        )
        self.messages.append(
            {"role": "tool", "name": name, "tool_call_id": call_id, "content": output.output}
        )


def run_reporting_errors(harness: SimpleHarness) -> None:
    """harness.run(), with any failure inside it sent as an `error` event and a `run_end`, so a reader sees it."""
    try:
        harness.run()
    except Exception as e:
        # A backend that knows what went wrong (VLLMBackend's ServerError) says it in both languages itself.
        step = {"step": harness.step} if harness.step else {}  # drawn in the step it failed in
        harness.emit(
            "error",
            message={
                "en": f"The run failed: {getattr(e, 'en', f'{type(e).__name__}: {e}')}",
                "zh": f"執行失敗：{getattr(e, 'zh', f'{type(e).__name__}: {e}')}",
            },
            **step,
        )
        harness.emit(
            "run_end",
            stop_reason="error",
            final="",
            steps=harness.step,
            ms=round((time.perf_counter() - harness._start) * 1000, 1),
        )


def common_prefix(a: str, b: str) -> int:
    """How many leading characters two strings share."""
    return len(os.path.commonprefix([a, b]))


def role_counts(messages: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in messages:
        counts[m["role"]] = counts.get(m["role"], 0) + 1
    return counts


def role_tokens(llm, messages: list[dict], tools, thinking: bool, encoded) -> dict[str, int]:
    """Of the prompt's tokens, how many each role's messages take. The prompt is cut where the
    template's rendering of the messages up to each one stops agreeing with it (a template that
    rewrites earlier turns, such as dropping old thinking, moves the cut back, never forward), and
    the tokens of each cut-off part go to its message's role; the opened reply after the last
    message is the assistant's. Costs one render and one tokenization per message."""
    prompt = encoded.text
    counts: dict[str, int] = {}
    before = 0  # tokens up to the last cut
    cut = 0
    for k, message in enumerate(messages, 1):
        try:
            part = llm.render(messages[:k], tools, thinking, generation_prompt=False)
        except Exception:  # a template that refuses a conversation cut here: the next cut takes it
            continue
        cut = max(cut, common_prefix(part, prompt))
        upto = llm.encode(prompt[:cut]).n_tokens if cut else 0
        counts[message["role"]] = counts.get(message["role"], 0) + max(0, upto - before)
        before = max(before, upto)
    counts["assistant"] = counts.get("assistant", 0) + max(0, encoded.n_tokens - before)
    return counts
