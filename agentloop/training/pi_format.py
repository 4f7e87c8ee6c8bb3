"""Training conversations in pi's format (issue 42): the question answered through pi's own system prompt and its bash
tool, `python3 -c '…'`, as pi sends it to this project's OpenAI-compatible endpoint.

pi's prompt, tools and the way it returns a bash result are what the real pi sends (pi_request.json, captured by
scripts/capture_pi_request.py from node_modules; tests/test_training_data.py fails when pi's output changes). A
conversation here is the request pi sends at each step, built from a `Task` (conversations.py): the question as a
text part, the model's bash call, bash's output. Each request goes through the endpoint's own path
(model_endpoint.conversation_from: the messages SimpleHarness keeps, and pi's tools) and the family's chat template,
so the training text is the text the model reads when pi drives it (a test holds the prompt to the one PiHarness's
pi sends). Some conversations are several questions (pi_session: follow-ups read from pi's session). eval-tiny
measures it through real pi (evaluate.THROUGH_PI). Left out: thinking (what pi sends back of a thought is not
captured yet), denials, errors and files through pi.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta
from functools import cache
from pathlib import Path

from agentloop.harnesses.model_endpoint import conversation_from
from agentloop.harnesses.pi.command import PI_CLI
from agentloop.paths import ROOT
from agentloop.training.conversations import Task

STORED = Path(__file__).with_name("pi_request.json")
# The line pi's own bash tool adds to the prompt; the extension's sandboxed bash (extension.ts) adds none.
LOCAL_BASH_GUIDELINE = (
    "- You can inspect PI_* environment variables for current model and session details.\n"
)


@cache
def captured() -> dict:
    """pi_request.json: pi's version, its system prompt (with {cwd}, {date}, {pi}), its tools."""
    return json.loads(STORED.read_text())


def system_prompt(rng: random.Random, pi_folder: Path | None = None) -> str:
    """pi's system prompt as PiHarness has pi write it with pi's own tools (settings.pi_tools "pi"): the
    working folder it names is /data, where the extension runs the tools, and the sandboxed bash brings no
    guideline of its own (pi's local bash adds one about PI_* variables); a date, and where npm put pi
    (`pi_folder`, else in this checkout). The rng is kept for the date."""
    day = date(2026, 1, 1) + timedelta(days=rng.randint(0, 700))
    text = captured()["system_prompt"].replace(LOCAL_BASH_GUIDELINE, "")
    return (
        text.replace("{cwd}", "/data")
        .replace("{date}", day.isoformat())
        .replace("{pi}", str(pi_folder or PI_CLI.parents[2]))
    )


# pi names its own folder in its prompt (where its docs are), and that folder is in the reader's checkout: CI's
# clone, a laptop's, this machine's. A model trained on one checkout's path reads another's as text it never saw
# before the question, so training draws the checkout: this one's half the time, else one of these.
CHECKOUT_PARENTS = (
    "/root", "/home/ana", "/home/li", "/home/runner/work", "/Users/sam", "/Users/mei", "/work", "/opt",
    "/srv", "/tmp", "/builds", "/home/dev/code",
)  # fmt: skip
CHECKOUT_NAMES = (
    "agentloop",
    "src/agentloop",
    "agentloop-main",
    "projects/agentloop",
    "main",
    "repo",
)


def pi_folder(rng: random.Random) -> Path:
    """Where npm put pi in a reader's checkout, as training draws it (CHECKOUT_PARENTS, CHECKOUT_NAMES)."""
    here = PI_CLI.parents[2]
    if rng.random() < 0.5:
        return here
    return Path(rng.choice(CHECKOUT_PARENTS), rng.choice(CHECKOUT_NAMES), here.relative_to(ROOT))


def bash_command(code: str) -> str:
    """The bash call that runs `code` as run_python would: python3 -c with the code in single quotes (the
    tasks' code never holds a single quote)."""
    assert "'" not in code, code
    return f"python3 -c '{code}'"


def pi_request(t: Task | list[Task], system: str) -> dict:
    """The request pi sends after a good run of `t` (every step's request is a prefix of it): pi's system
    prompt, the question as a text part, the model's bash call and bash's output (a line of output ends with a
    newline, as pi returns it), the answer; and pi's tools. A list of tasks is a conversation pi kept in its
    session: each question after the last one's answer, as a follow-up's request carries them."""
    messages: list[dict] = [{"role": "system", "content": system}]
    for n, one in enumerate(t if isinstance(t, list) else [t], 1):
        messages.append({"role": "user", "content": [{"type": "text", "text": one.question}]})
        if one.code is not None:
            arguments = json.dumps({"command": bash_command(one.code)}, ensure_ascii=False)
            messages += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{n}",
                            "type": "function",
                            "function": {"name": "bash", "arguments": arguments},
                        }
                    ],
                },
                {"role": "tool", "content": one.output + "\n", "tool_call_id": f"call_{n}"},
            ]
        messages.append({"role": "assistant", "content": one.answer})
    return {"messages": messages, "tools": captured()["tools"]}


def pi_session(rng: random.Random, descending_share: float) -> list[Task]:
    """A conversation of two to four questions as pi holds it in its session: sessions.py's, of the kinds whose
    runs pi's format here can write (independent questions, follow-ups, chat); denials, errors and files through
    pi are left out (see the module's docstring)."""
    from agentloop.training.sessions import session

    while True:
        turns = session(rng, descending_share=descending_share)
        if not any(left_out_of_pi(t) for t in turns):
            return turns


def left_out_of_pi(t: Task) -> bool:
    """A turn pi's format here cannot write: a denied or failed call, a save and its reads."""
    return (
        t.kind in ("write", "read", "retry")
        or t.denied
        or bool(t.failed)
        or t.output.startswith("Traceback")
    )


def pi_messages(
    t: Task | list[Task], system: str, thinking_key: str
) -> tuple[list[dict], list[dict]]:
    """The messages and tools the endpoint renders for `t`'s run through pi (conversation_from's), under pi's
    system prompt `system` (system_prompt's); `t` a list: a conversation (pi_session's)."""
    messages, tools = conversation_from(pi_request(t, system), thinking_key)
    return messages, tools or []
