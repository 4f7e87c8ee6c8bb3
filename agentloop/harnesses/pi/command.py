"""How pi is started: the command line (pi and its Node from `npm ci`, our extension, nothing of the
user's, the session file, the tools the model sees), its environment (what the extension needs: whose
tools, the book's prompt and tools, how to start agentloop, the conversation's folder) and its private
agent dir (settings with retries and compaction off, models.json naming this page's model, and the
reader's pi logins when they opt in).

pi never starts in the conversation's folder, and its tools never run there: the model's code writes
that folder, and pi reads `.pi/SYSTEM.md` from its working folder, and `python -m` imports from it. pi
starts in PI_CWD, a folder of this package's. The extension is told the folder's path
(AGENTLOOP_FOLDER) and runs each tool through AGENTLOOP_RUNNER from pi's working folder: Python isolated
(-I), so neither the working folder nor PYTHONPATH is on sys.path, and agentloop imported from the
project's root (sandbox/data_folder.py: host code never trusts /data).

Left out: talking to pi once it runs (rpc.py), and what the run does with it (harness.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.harnesses.simple_harness import SYSTEM_NO_TOOLS, SYSTEM_WITH_TOOLS
from agentloop.paths import ROOT

if TYPE_CHECKING:  # for the annotations only: pi's menu starts pi without a model or an endpoint
    from agentloop.harnesses.model_endpoint import ModelEndpoint
    from agentloop.harnesses.settings import RunSettings
    from agentloop.model_backends import Backend
    from agentloop.tools import Tool

# pi and the Node it needs (>= 22.19), both from `npm ci` (package.json); never the system's node.
NODE = ROOT / "node_modules" / "node" / "bin" / "node"
PI_CLI = (
    ROOT / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
)
EXTENSION = Path(__file__).with_name("extension.ts")
PROVIDER = "agent-loop"  # the name models.json gives this page's model in pi
# pi caps max_tokens at the window less 4096 tokens it keeps for providers that count the input
# higher than its estimate (pi-ai's clampMaxTokensToContext). The endpoint counts with the model's
# own tokenizer, so the window pi is told carries that margin on top: a tiny model's 4096-token
# window would leave pi 1 token.
PI_CONTEXT_MARGIN = 4096
# pi's settings for a run: its own retries off, so one failed request is one error the reader sees.
# Compaction off: pi would ask the model for a summary in place of the conversation, a turn the reader
# did not ask for, and the session kept for the next question would hold the summary, not what was said.
PI_SETTINGS = {
    "retry": {"enabled": False, "provider": {"maxRetries": 0}},
    "compaction": {"enabled": False},
    "quietStartup": True,
}
# pi's working folder: this package's own, the same for every run, so a session pi wrote in one run
# names a folder that still exists in the next (pi refuses a session whose folder is gone).
PI_CWD = Path(__file__).parent


class PiUnavailable(RuntimeError):
    """pi or its Node is missing: `npm ci` installs both."""


# pi with nothing of the reader's: no network beyond its provider, and none of the extensions, skills, prompt
# templates, themes, context files or MCP servers a pi installation may hold.
PI_ISOLATED = (
    "--offline",
    "--no-extensions",
    "--no-skills",
    "--no-prompt-templates",
    "--no-themes",
    "--no-context-files",
    "--no-mcp",
)


def pi_command(session: Path | None = None, tools: Sequence[str] | None = None) -> list[str]:
    """pi in RPC mode with nothing of the user's: no extensions, skills, templates, themes, context
    files or MCP; its session in the file `session` (None: none kept); our extension, which
    registers every tool the model may call, to run in the sandbox. `tools`: pi's own tools the
    model sees (the extension's versions of them); None: pi's built-in tools off, the book's on."""
    if not NODE.exists() or not PI_CLI.exists():
        raise PiUnavailable(
            f"pi is not installed: run `npm ci` in {ROOT} (it brings pi and Node 22)"
        )
    return [
        str(NODE),
        str(PI_CLI),
        "--mode",
        "rpc",
        *(["--session", str(session)] if session else ["--no-session"]),
        *PI_ISOLATED,
        "--no-approve",
        *tool_flags(tools),
        "-e",
        str(EXTENSION),
    ]


def tool_flags(tools: Sequence[str] | None) -> list[str]:
    if tools is None:
        return ["--no-builtin-tools"]
    return ["--tools", ",".join(tools)] if tools else ["--no-tools"]


# How the extension starts agentloop's CLI for a tool: isolated (-I), importing agentloop from the
# project's root, the code this process runs, whatever the virtual environment's install points at.
RUNNER = "import sys; sys.path.insert(0, sys.argv.pop(1)); from agentloop.cli import main; sys.exit(main(sys.argv[1:]))"


def pi_env(
    agent_dir: Path, tools: dict[str, Tool], folder: Path | None = None, pi_tools: str = "book"
) -> dict[str, str]:
    """pi's environment: the server's (pi's own providers read their keys from it) without the
    user's PI_ settings, plus what the extension needs: whose tools ("pi" or "book"), the book's
    prompt and tools, how to start agentloop (isolated: see the module's docstring) and the
    conversation's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    env.update(
        PI_CODING_AGENT_DIR=str(agent_dir),
        PI_OFFLINE="1",
        PI_TELEMETRY="0",
        AGENTLOOP_PI_TOOLS=pi_tools,
        AGENTLOOP_SYSTEM_PROMPT=SYSTEM_WITH_TOOLS if tools else SYSTEM_NO_TOOLS,
        AGENTLOOP_RUNNER=json.dumps([sys.executable, "-I", "-c", RUNNER, str(ROOT)]),
        AGENTLOOP_TOOLS=json.dumps(
            [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools.values()
            ]
        ),
        AGENTLOOP_FOLDER=str(folder or ""),
    )
    return env


# The switch, off unless set to "1" (`agentloop serve --pi-logins`, `agentloop run --pi-logins`): pi's
# own models may then use the logins and providers the reader keeps in pi (their pi agent dir's
# auth.json and models.json); otherwise only API keys in the environment count.
LOGINS_SWITCH = "AGENTLOOP_PI_LOGINS"
LOGIN_BYTES = 1 << 20  # auth.json or models.json larger than this is not read


def logins_opted_in() -> bool:
    return os.environ.get(LOGINS_SWITCH) == "1"


def user_agent_dir() -> Path:
    """The reader's own pi agent dir, where pi keeps their logins: PI_CODING_AGENT_DIR, else
    ~/.pi/agent."""
    return Path(os.environ.get("PI_CODING_AGENT_DIR") or Path.home() / ".pi" / "agent")


def user_logins(agent_dir: Path) -> dict:
    """With the switch on, the reader's pi logins copied into the private agent dir `agent_dir`
    (auth.json, readable by its owner only) and their own providers (models.json's) returned, to be
    written beside this page's. Never into the conversation's folder: the model's code reads that."""
    if not logins_opted_in():
        return {}
    found: dict = {}
    for name in ("auth.json", "models.json"):
        path = user_agent_dir() / name
        if not path.is_file() or path.stat().st_size > LOGIN_BYTES:
            continue
        if name == "auth.json":
            fd = os.open(agent_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(path.read_bytes())
        else:
            try:
                providers = json.loads(path.read_text()).get("providers")
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
                providers = None
            found = providers if isinstance(providers, dict) else {}
    return found


def write_agent_dir(
    agent_dir: Path,
    endpoint: ModelEndpoint | None,
    llm: Backend | None,
    settings: RunSettings | None,
) -> None:
    """pi's private agent dir: settings with its retries off; with the switch on, the reader's pi
    logins and providers (user_logins); models.json naming this page's model when it runs here."""
    (agent_dir / "settings.json").write_text(json.dumps(PI_SETTINGS))
    providers = user_logins(agent_dir)
    if endpoint is None:
        if providers:
            (agent_dir / "models.json").write_text(json.dumps({"providers": providers}))
        return
    model = {
        "id": pi_model_id(llm),
        "name": f"{pi_model_id(llm)} (this page's model)",
        "reasoning": True,
        # An image pi sends goes to the model when the model reads images (the endpoint decodes it).
        "input": ["text", "image"] if "image" in getattr(llm, "modalities", ()) else ["text"],
        "contextWindow": llm.context_length + PI_CONTEXT_MARGIN,
        "maxTokens": settings.max_new_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    **providers,
                    PROVIDER: endpoint_provider(endpoint.base_url, endpoint.secret, model),
                }
            },
            indent=2,
        )
    )


def pi_model_id(llm: Backend) -> str:
    """The model's name in pi's menu: its folder's or repository's last part."""
    return Path(llm.model_id).name


def endpoint_provider(base_url: str, api_key: str, model: dict) -> dict:
    """pi's models.json entry for an OpenAI-compatible endpoint that serves `model`: chat completions with
    `max_tokens`, and none of the OpenAI-only fields (developer role, reasoning effort, store) it would refuse."""
    return {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": api_key,
        "compat": {
            "supportsDeveloperRole": False,
            "supportsReasoningEffort": False,
            "supportsStore": False,
            "maxTokensField": "max_tokens",
        },
        "models": [model],
    }
