"""PiHarness and what it takes to run pi, the coding agent, as a harness (chapter 16).

- `harness.py`: PiHarness: pi's records as the book's events, with the same Reader as SimpleHarness
- `rpc.py`: pi in RPC mode as a child process: commands in, records out, one JSON object a line
- `command.py`: how pi is started: its command line, its environment, its private agent dir
- `menu.py`: pi's own models (those it has credentials for), and PiMenu, which keeps them a minute
- `session.py`: pi's session file in the conversation's folder, copied in and out under /data's rules
- `sandboxed.py`: each operation of pi's own tools, run in the sandbox (`agentloop pi-op`)
- `extension.ts`: the extension pi loads: reports requests, asks permission, runs every tool in the
  sandbox (pi's own, or the book's)

Nothing is imported here: HARNESSES names harness.py's class, and `agentloop tool`, which pi runs at every
tool call, must not pay for any of this.
"""
