"""Harnesses run the agent loop. Each meets base.Harness: made with (llm, history, question, settings, emit,
files, attachments), it sends the events of events.py as it runs and is driven by decide() and stop().

- `base.py`: the Harness protocol; Reader, the reader's side both share (permission, Stop, the time
  limit, the pace); run_reporting_errors
- `settings.py`: RunSettings and run_settings, the one merge of a run's settings; tools_for; the paces
- `step.py`: take_step, one step's model part (render, encode, context, generate, parse), and the
  prompt's accounting for the context event
- `pace.py`: paced, a step's generation held at the reader's pace, the holds kept out of its timings
- `simple_harness.py`: SimpleHarness: ours, every stage in view
- `pi/`: PiHarness: the pi coding agent as a child in RPC mode, its records as events; how pi is
  started, its RPC, its own models' menu, and the extension it loads (extension.ts)
- `model_endpoint.py`: ModelEndpoint: this page's model as an OpenAI-compatible endpoint, for pi

HARNESSES is the one registry: the CLI's --harness choices, the server's settings schema and /api/status (whose
list the panels' harness switch shows) all read it. A new harness is one file meeting base.Harness and one entry
here, plus its chapter and its label in docs/assets/i18n.js (`harness.<name>`). Entries name their class rather
than import it, so that reading the registry costs nothing: `agentloop tool`, which pi runs at every tool call,
builds the CLI's parser, and pi's harness alone takes 0.4 s to import.
"""

from __future__ import annotations

import importlib

HARNESSES = {  # name -> "module:class", imported when a run asks for it
    "simple": "agentloop.harnesses.simple_harness:SimpleHarness",
    "pi": "agentloop.harnesses.pi.harness:PiHarness",
}


def harness_class(name: str) -> type:
    """The class of the harness called `name` (a key of HARNESSES). KeyError for any other name."""
    module, _, cls = HARNESSES[name].partition(":")
    return getattr(importlib.import_module(module), cls)
