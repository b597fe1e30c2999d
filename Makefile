# Two commands on a fresh machine:
#   make demo   — install preflight and check the bundled example job
#   make test   — install everything (torch CPU for the dry run), check the import layers
#                 and run the full test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Where the test install takes torch from: PyTorch's CPU wheels, so that pip does not pull
# the multi-GB CUDA build that the package index serves for Linux. `make test TORCH_INDEX=`
# leaves the choice to pip's own settings (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL,
# PIP_FIND_LINKS), e.g. a CUDA machine that wants the CUDA build.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: demo test lint install install-test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	# torch first, pinned exactly, from TORCH_INDEX: the extras below then find it installed
	# one retry: where that index cannot be reached, pip backs off on every package it asks it
	# for, which costs minutes before it falls back to the other indexes
	$(BIN)/pip install -q $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX) --retries 1) "torch==2.13.0"
	$(BIN)/pip install -q -e ".[test,dryrun]"
	# litgpt's own model, the reference of its activation tables (tests/test_litgpt_block_saved.py):
	# without its declared dependencies, whose huggingface-hub<1.4 the test extra cannot meet;
	# its model code needs only torch and lightning, which the extra installs
	$(BIN)/pip install -q --no-deps "litgpt==0.5.13"

# exit status 1 means findings: the outcome the demo shows, not a failure of make
demo: install
	$(BIN)/preflight check examples/7b-full-finetune-ddp || [ $$? -eq 1 ]

# the layer contracts first (seconds), then the suite
test: install-test
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest

lint: install-test
	$(BIN)/lint-imports --no-cache

bench: install
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) build *.egg-info
