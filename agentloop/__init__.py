"""agentloop: an LLM agent loop small enough to read, quoted by the book that explains it.

Its rooms, each a package with its own overview:

- `model_families/`: how each model writes turns and tool calls
- `model_backends/`: what runs the model
- `harnesses/`: the loop
- `sandbox/`: where run_python's code runs, and the boundary around it
- `training/`: the tiny checkpoints taught to call a tool

and these files:

- `__main__.py`: `python -m agentloop`, the same command
- `cli.py`: the `agentloop` command: each subcommand a small function
- `events.py`: the one event vocabulary every stage reports in
- `guarded_http.py`: uvicorn's HTTP/1.1 guarded against connections that never finish a request
- `media.py`: attachments: checked by content, saved, decoded once, the user turn's parts
- `paths.py`: where things are on disk, the default model, and which checkpoint a model's name means
- `terminal.py`: `agentloop run`: a run in the terminal
- `tiny_models.py`: the tiny checkpoints of the real architectures, built offline
- `tools.py`: the tools the model may call, and the check of a call's arguments
- `torchvision_cpu.py`: the two operator names torchvision's import needs beside a CPU torch
- `zh_hans.py`: Simplified Chinese from the book's Traditional: OpenCC's tw2sp with the project's table
"""

from agentloop import torchvision_cpu

torchvision_cpu.install()  # before anything imports transformers, which imports torchvision
