#!/usr/bin/env bash
# The test command: set up, lint (ruff), type-check (pyright strict), then run the whole
# suite against a real Temporal dev server and real workers: its files on REACT_TEST_WORKERS
# processes (pytest-xdist, default 2), each with a dev server and workers of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export LITELLM_LOCAL_MODEL_COST_MAP=True
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/pyright
.venv/bin/pytest -n "${REACT_TEST_WORKERS:-2}" --dist loadfile "$@"
