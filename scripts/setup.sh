#!/usr/bin/env bash
# Install everything the project needs from its own lock file: uv (hash-pinned), then the
# locked dependencies (hash-checked) into .venv. Safe to run again; it only fills gaps.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version 2>/dev/null | cut -d' ' -f2)" != "0.13.9" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r scripts/bootstrap-requirements.txt
fi
uv sync --frozen --quiet "$@"
