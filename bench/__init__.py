"""Benchmark scripts (run as modules, e.g. `python -m bench.projection`); not tests."""
