# The two commands of the README. Both install what they need first.
PYTHON ?= python3
PIP = $(PYTHON) -m pip install --disable-pip-version-check -q

.PHONY: install demo test-deps lint test quick bench

install:
	# The CPU build of torch first, or pip pulls a multi-GB CUDA build for sentence-transformers.
	$(PIP) torch==2.13.0
	$(PIP) -e .

demo: install
	lodviz demo

test-deps:
	$(PIP) torch==2.13.0
	$(PIP) -e ".[test]"  # the package and what its tests need, in one install
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m mypy

# Two workers, each taking a whole module at a time, so a module's shared browser, server or store
# is started once: about 18 minutes here against 31 for one process.
test: test-deps lint
	$(PYTHON) -m pytest -n 2 --dist loadfile

# The fast lane for a developer: no browser, no real model, no server or PostgreSQL started, nothing
# marked slow; two workers (pytest-xdist). `make test` still runs the whole suite.
quick:
	$(PYTHON) -m pytest -m "not model and not browser and not slow" -n 2 -q

bench: install
	$(PYTHON) benchmarks/run.py
