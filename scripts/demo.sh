#!/usr/bin/env bash
# One command, fresh machine to a finished agent run: install, start the embedded Temporal
# dev server and a worker, run an agent and stream its events, then stop them again.
#
#   scripts/demo.sh                          # scripted demo agent (no LLM needed)
#   REACT_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=... scripts/demo.sh "What is 17 * 23?"
#
# Run history is kept in .temporal/dev.db: `.venv/bin/python worker.py --dev` brings the
# server back with the Web UI on http://localhost:8233.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --no-dev --inexact
export LITELLM_LOCAL_MODEL_COST_MAP=True
mkdir -p .temporal
.venv/bin/python worker.py --dev >.temporal/worker.log 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT

for _ in $(seq 1 120); do
  grep -q "worker polling" .temporal/worker.log 2>/dev/null && break
  if ! kill -0 "$worker" 2>/dev/null; then cat .temporal/worker.log; exit 1; fi
  sleep 0.5
done
grep -q "worker polling" .temporal/worker.log || { echo "the worker did not start; see .temporal/worker.log"; exit 1; }

.venv/bin/python client.py run "${1:-What is 17 * 23?}" --tool calculator
