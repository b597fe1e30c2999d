# Two commands on a fresh machine:
#   make demo   — install preflight and check the bundled example job
#   make test   — install everything (torch CPU for the dry run) and run the full test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-test bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	# torch pinned exactly: the CPU wheel; a range would pull a multi-GB CUDA build
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[test,dryrun]"

demo: install
	-$(BIN)/preflight check examples/7b-full-finetune-ddp

test: install-test
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) build *.egg-info
