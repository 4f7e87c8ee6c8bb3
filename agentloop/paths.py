"""Where the project keeps things on disk."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The Hugging Face cache (models--org--name/...) and the tiny checkpoints; AGENTLOOP_MODELS moves it.
MODELS_DIR = Path(os.environ.get("AGENTLOOP_MODELS", ROOT / "models")).resolve()
