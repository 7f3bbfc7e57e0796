"""lodviz benchmarks: ``python benchmarks/run.py`` (see docs/benchmarks.md)."""
