"""A run's settings: what every harness, the terminal, the demo server and the evaluation read, and the one
merge that makes them (`run_settings`).

The defaults are the book's (chapter 14 explains the limits); the sampling ones give way to what the model's
checkpoint recommends (generation_config.json, through the family), and what a caller gives wins over both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentloop.model_families import Sampling
from agentloop.tools import DEFAULT_TOOLS, TOOLS, Tool, select

# How fast a run goes (RunSettings.pace), so a reader can study it and not only watch it. "full": as fast
# as the model goes. "slow": SLOW_S before each token, long enough to read each one and press Stop between
# two. "step": before each stage (the prefill, each token, the parse, an approved call) the run sends
# `paused` and waits for the reader's Next. The waits are the Reader's (base.py); pace.py keeps them out of
# the model's timings.
PACES = ("full", "slow", "step")
PI_TOOLS = ("pi", "book")
# pi's own tools (pi 1.6's, each run in the sandbox by pi/extension.ts), and those pi gives the model
# unless told otherwise (its --tools default). settings.tools may name them beside the book's.
PI_OWN_TOOLS = ("read", "bash", "edit", "write", "grep", "find", "ls")
PI_DEFAULT_TOOLS = ("read", "bash", "edit", "write")
SLOW_S = 0.3


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
    # Drafted decoding (chapter 10): the same tokens, fewer forward passes of the model.
    mtp: bool = False
    # Which loop runs the question: a name in harnesses.HARNESSES ("simple" or "pi").
    harness: str = "simple"
    # PiHarness only: one of pi's own models as "provider/id"; "": this page's model.
    pi_model: str = ""
    # PiHarness only: one of PI_TOOLS, what pi gives the model: "pi", its own system prompt and tools
    # (each run in the sandbox); "book", agentloop's system prompt and tools, as SimpleHarness gives them.
    pi_tools: str = "pi"
    # The sampler's seed (chapter 9): a sampled run then replays as recorded.
    seed: int | None = None
    # One of PACES: how fast the run goes, and where it waits for the reader's Next (chapter 14).
    pace: str = "full"

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
    return replace(settings, tools=checked_tools(settings.tools))


def checked_tools(names) -> tuple[str, ...]:
    """The tool names, each one of the book's (tools.py) or one of pi's own. ValueError naming the
    tools there are, for any other."""
    names = tuple(names)
    select(n for n in names if n not in PI_OWN_TOOLS)  # the book's: tools.py's one check
    return names


def pi_tool_names(settings: RunSettings) -> list[str]:
    """pi's own tools the model sees in a run: those settings.tools names, in pi's order, or pi's
    defaults when it names none of them (the book's default, run_python, is not one); none when
    use_tools is off."""
    if not settings.use_tools:
        return []
    named = [n for n in PI_OWN_TOOLS if n in settings.tools]
    return named or list(PI_DEFAULT_TOOLS)


def tools_for(settings: RunSettings) -> dict[str, Tool]:
    """The tools the model sees in a run: those settings.tools names, in the registry's order; none
    when use_tools is off."""
    return {n: t for n, t in TOOLS.items() if n in settings.tools} if settings.use_tools else {}
