"""How pi is started: the command line (pi and its Node from `npm ci`, our extension, nothing of the
user's), its environment (what the extension needs: the prompt, the tools, the interpreter, the
conversation's folder) and its private agent dir (settings with retries off, models.json naming this
page's model).

pi never starts in the conversation's folder, and its tools never run there: the model's code writes
that folder, and pi reads `.pi/SYSTEM.md` from its working folder, and `python -m` imports from it. The
extension is told the folder's path (AGENTLOOP_FOLDER) and runs each tool as `python -I -m agentloop
tool` from pi's own working folder: isolated, so neither the working folder nor PYTHONPATH is on
sys.path and agentloop comes from the virtual environment (sandbox/data_folder.py: host code never trusts
/data).

Left out: talking to pi once it runs (rpc.py), and what the run does with it (harness.py)."""

from __future__ import annotations

import json
import os
import sys
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
PI_SETTINGS = {"retry": {"enabled": False, "provider": {"maxRetries": 0}}, "quietStartup": True}


class PiUnavailable(RuntimeError):
    """pi or its Node is missing: `npm ci` installs both."""


def pi_command() -> list[str]:
    """pi in RPC mode with nothing of the user's: no extensions, skills, templates, themes, context
    files or MCP, no session file; our extension; pi's built-in tools off (the extension registers
    ours instead)."""
    if not NODE.exists() or not PI_CLI.exists():
        raise PiUnavailable(
            f"pi is not installed: run `npm ci` in {ROOT} (it brings pi and Node 22)"
        )
    return [
        str(NODE),
        str(PI_CLI),
        "--mode",
        "rpc",
        "--no-session",
        "--offline",
        "--no-approve",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--no-mcp",
        "--no-builtin-tools",
        "-e",
        str(EXTENSION),
    ]


def pi_env(agent_dir: Path, tools: dict[str, Tool], folder: Path | None = None) -> dict[str, str]:
    """pi's environment: the server's (pi's own providers read their keys from it) without the
    user's PI_ settings, plus what the extension needs: the prompt, the tools, the interpreter
    that runs them (isolated: see the module's docstring) and the conversation's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PI_")}
    env.update(
        PI_CODING_AGENT_DIR=str(agent_dir),
        PI_OFFLINE="1",
        PI_TELEMETRY="0",
        AGENTLOOP_SYSTEM_PROMPT=SYSTEM_WITH_TOOLS if tools else SYSTEM_NO_TOOLS,
        AGENTLOOP_PYTHON=sys.executable,
        AGENTLOOP_TOOLS=json.dumps(
            [
                {"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools.values()
            ]
        ),
        AGENTLOOP_FOLDER=str(folder or ""),
    )
    return env


def write_agent_dir(
    agent_dir: Path, endpoint: ModelEndpoint | None, llm: Backend | None, settings: RunSettings
) -> None:
    """pi's private agent dir: settings with its retries off, and models.json naming this page's
    model."""
    (agent_dir / "settings.json").write_text(json.dumps(PI_SETTINGS))
    if endpoint is None:
        return
    model = {
        "id": pi_model_id(llm),
        "name": f"{pi_model_id(llm)} (this page's model)",
        "reasoning": True,
        "input": ["text"],
        "contextWindow": llm.context_length + PI_CONTEXT_MARGIN,
        "maxTokens": settings.max_new_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    PROVIDER: {
                        "baseUrl": endpoint.base_url,
                        "api": "openai-completions",
                        "apiKey": endpoint.secret,
                        "compat": {
                            "supportsDeveloperRole": False,
                            "supportsReasoningEffort": False,
                            "supportsStore": False,
                            "maxTokensField": "max_tokens",
                        },
                        "models": [model],
                    }
                }
            },
            indent=2,
        )
    )


def pi_model_id(llm: Backend) -> str:
    """The model's name in pi's menu: its folder's or repository's last part."""
    return Path(llm.model_id).name
