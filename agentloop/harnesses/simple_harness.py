"""SimpleHarness: the agent loop itself, one question at a time (chapter 1).

Each step renders the whole conversation into one string, has the model generate, and reads what it wrote. A
reply without a tool call is the final answer; a tool call is validated against the tool's schema, shown to the
reader for approval, run, and its result appended, and the loop goes round again. Every stage sends an event
(events.py), which is all the book's panels and the terminal ever see.

A step's model part (render, encode, generate, parse) is step.py's `take_step`, which the model endpoint pi
calls takes too; the reader's side (permission, Stop, the time limit, the pace) is base.py's `Reader`, which
PiHarness holds too. With attachments (media.py, chapter 7) the question is a list of content parts, and each step's
prompt is encoded with the conversation's media. Left out here: pi's loop (pi/harness.py).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from agentloop import events, media
from agentloop.harnesses.base import Reader
from agentloop.harnesses.settings import RunSettings, tools_for
from agentloop.harnesses.step import take_step
from agentloop.model_backends import Backend
from agentloop.model_backends.facts import model_facts
from agentloop.sandbox import data_folder
from agentloop.tools import Tool, ToolOutput, validate

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


class SimpleHarness:
    takes_attachments = True  # media become parts of the question (media.py)

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
        self.tools = tools_for(settings)
        self._emit = emit
        self.reader = Reader(settings, self.emit)  # permission, Stop and the time limit
        self.step = 0  # the step running now, so a failure can name it

    def run(self) -> None:
        # [quote:start]
        s = self.settings
        family = self.llm.family  # how this model writes its turns, thinking and tool calls
        tools = [t.schema() for t in self.tools.values()] or None  # for the template and the parser
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
            **model_facts(self.llm),  # what the model is, for the run's Model tab
        )
        # [/quote:start]

        # [quote:setup]
        seen: dict[
            tuple[str, str], bool
        ] = {}  # each call answered so far -> approved: repeats caught
        format_errors = 0
        prev_prompt = ""
        stop_reason, final = "max_steps", ""
        # [/quote:setup]
        # [quote:forget]
        self.llm.forget()  # nothing cached by another run: step 1 computes its whole prompt
        # [/quote:forget]
        # [quote:step]
        for step in range(1, s.max_steps + 1):
            self.step = step
            self.emit("step_start", step=step)
            taken = take_step(
                self.llm,
                step,
                [system, *self.messages],
                tools,
                s.thinking,
                s.sampling,
                self.emit,
                self.reader.should_stop,
                prev_prompt,
                hold=self.reader.hold,  # the reader's pace
            )
            prev_prompt, raw = taken.prompt, taken.done.pop("raw")
            self.emit("model_end", step=step, raw=raw, **taken.done)
            if taken.parsed is None:  # stopped while the model wrote
                stop_reason = self.reader.why_stopped()
                break
            parsed = taken.parsed
            # [/quote:step]

            # [quote:reply]
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
            # [/quote:reply]

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
                    approved = self.reader.ask(step, call_id)
                    if approved is None:  # stopped while waiting
                        stop_reason = self.reader.why_stopped()
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
        self.emit("run_end", stop_reason=stop_reason, final=final, steps=step, ms=self.reader.ms())
        # [/quote:end]

    # -- the reader's side, from other threads ----------------------------------------------------------------------

    def decide(self, call_id: str, approve: bool) -> bool:
        return self.reader.decide(call_id, approve)

    def stop(self) -> None:
        self.reader.stop()

    # -- the steps the loop reads as one line each --------------------------------------------------------------------

    def emit(self, kind: str, **fields) -> None:
        """Send an event, with the ms since the run started (replays keep the run's pace) and the line that
        sent it (the panels link an event to its source, live as in a replay)."""
        self._emit(events.make(kind, **fields, t_ms=self.reader.ms(), src=events.caller(skip=1)))

    def _run_tool(self, tool: Tool, args: dict) -> ToolOutput:
        try:
            return tool.run(args, self.files)
        except Exception as e:
            # A broken tool is a result the model can read, not the end of the run
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
