#!/usr/bin/env bash
# One command, fresh machine to a finished agent run with a real model: install, start the
# embedded Temporal dev server and a worker, run an agent and stream its events, then stop them.
#
#   scripts/demo.sh                    # the bundled local model, SmolLM2-135M: no key, no network
#   scripts/demo.sh "What is 6 * 7?"   # the same with your question
#   scripts/demo.sh --scripted         # the scripted demo agent: no LLM at all, instant
#   REACT_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=... scripts/demo.sh "What is 17 * 23, squared?"
#   REACT_MODEL=ollama_chat/llama3.2 scripts/demo.sh                # Ollama on its default port
#
# The first run builds llama.cpp for the local model (about 10 minutes, once). The model
# server listens on 127.0.0.1:8765 while the demo runs (log: .temporal/local-model.log).
# Run history is kept in .temporal/dev.db: `.venv/bin/python worker.py --dev` brings the
# server back with the Web UI on http://localhost:8233.
set -euo pipefail
cd "$(dirname "$0")/.."

setup=(--no-dev --inexact)
if [ "${1:-}" = "--scripted" ]; then
  shift
  export REACT_MODEL=scripted
fi
if [ -n "${REACT_MODEL:-}" ] && [ "$REACT_MODEL" != "llamafile/smollm2-135m-instruct" ]; then
  setup+=(--no-local-model) # another model was chosen: no need to build llama.cpp
fi
scripts/setup.sh "${setup[@]}"
export LITELLM_LOCAL_MODEL_COST_MAP=True
# A chosen model without its key (or a local model that is not installed): one line, then stop.
.venv/bin/python -c 'import sys; from cli.demo import check; sys.exit(check())'

mkdir -p .temporal
pids=()
trap 'kill ${pids[@]+"${pids[@]}"} 2>/dev/null || true; wait ${pids[@]+"${pids[@]}"} 2>/dev/null || true' EXIT
if [ -z "${REACT_MODEL:-}" ]; then
  # Load the local model while the worker starts (it would start it itself on the first call,
  # a few seconds later; one already serving on its port is used and this one just exits).
  .venv/bin/python -m activities.local_model serve --parent-pid $$ >>.temporal/local-model.log 2>&1 &
  pids+=($!)
fi
.venv/bin/python worker.py --dev >.temporal/worker.log 2>&1 &
worker=$!
pids+=("$worker")

for _ in $(seq 1 120); do
  grep -q "worker polling" .temporal/worker.log 2>/dev/null && break
  if ! kill -0 "$worker" 2>/dev/null; then cat .temporal/worker.log; exit 1; fi
  sleep 0.5
done
grep -q "worker polling" .temporal/worker.log || { echo "the worker did not start; see .temporal/worker.log"; exit 1; }

.venv/bin/python client.py run "${1:-What is 17 * 23?}" --tool calculator
