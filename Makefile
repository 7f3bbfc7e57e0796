# The two commands of the README. Both install what they need first.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install --disable-pip-version-check -q

.PHONY: install demo test-deps lint test bench

install:
	# The CPU build of torch first, or pip pulls a multi-GB CUDA build for sentence-transformers.
	$(PIP) torch==2.13.0
	$(PIP) -e .

demo: install
	lodviz demo

test-deps: install
	$(PIP) -e ".[test]"
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

test: test-deps lint
	$(PYTHON) -m pytest

bench: install
	$(PYTHON) benchmarks/run.py
