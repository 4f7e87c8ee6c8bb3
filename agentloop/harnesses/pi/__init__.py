"""PiHarness and what it takes to run pi, the coding agent, as a harness (chapter 16).

- `harness.py`: PiHarness: pi's records as the book's events, with the same Reader as SimpleHarness
- `rpc.py`: pi in RPC mode as a child process: commands in, records out, one JSON object a line
- `command.py`: how pi is started: its command line, its environment, its private agent dir
- `menu.py`: pi's own models (those it has credentials for), and PiMenu, which keeps them a minute
- `extension.ts`: the extension pi loads: reports requests, asks permission, registers our tools

Nothing is imported here: HARNESSES names harness.py's class, and `agentloop tool`, which pi runs at every
tool call, must not pay for any of this.
"""
