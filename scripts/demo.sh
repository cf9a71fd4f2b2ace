#!/usr/bin/env bash
# One command, fresh machine to a finished agent run with a real model: install, start the
# embedded Temporal dev server and a worker, run an agent and stream its events, then stop them.
#
#   scripts/demo.sh                    # the bundled local model, SmolLM2-135M: no key, no network
#   scripts/demo.sh "What is 6 * 7?"   # the same with your question
#   scripts/demo.sh --scripted         # the scripted demo agent: no LLM at all, instant
#   scripts/demo.sh --web              # the same, plus the gateway: chat in the browser (Ctrl-C stops)
#   scripts/demo.sh --web --scripted   # the chat page on the scripted demo agent
#   REACT_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=... scripts/demo.sh "What is 17 * 23, squared?"
#   REACT_MODEL=ollama_chat/llama3.2 scripts/demo.sh                # Ollama on its default port
#
# The first run builds llama.cpp for the local model (389 s measured on 2 cores, once). The model
# server listens on 127.0.0.1:8765 while the demo runs (log: .temporal/local-model.log).
# Run history is kept in .temporal/dev.db: `.venv/bin/python worker.py --dev` brings the
# server back with the Web UI on http://localhost:8233.
#
# With --web it also starts the gateway (`gateway.py --agents cli.demo:web_agents`, log:
# .temporal/gateway.log) on 127.0.0.1:${REACT_GATEWAY_PORT:-8400}, prints the chat page's address
# and keeps everything running until Ctrl-C. The page's `default` agent asks before each
# calculator call (approve, deny or edit it on the page); `auto` does not.
set -euo pipefail
cd "$(dirname "$0")/.."

setup=(--no-dev --inexact)
web=0
while [ $# -gt 0 ]; do
  case "$1" in
    --scripted) export REACT_MODEL=scripted ;;
    --web) web=1 ;;
    *) break ;;
  esac
  shift
done
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
# `worker.py --dev` loads the local model (when it is the model) while the dev server starts, and
# starts a redis-server beside the dev server when one is installed: runs stream through it.
.venv/bin/python worker.py --dev >.temporal/worker.log 2>&1 &
worker=$!
pids+=("$worker")

for _ in $(seq 1 120); do
  grep -q "worker polling" .temporal/worker.log 2>/dev/null && break
  if ! kill -0 "$worker" 2>/dev/null; then cat .temporal/worker.log; exit 1; fi
  sleep 0.5
done
grep -q "worker polling" .temporal/worker.log || { echo "the worker did not start; see .temporal/worker.log"; exit 1; }

if [ "$web" = 0 ]; then
  .venv/bin/python client.py run "${1:-What is 17 * 23?}" --tool calculator
  exit 0
fi

port="${REACT_GATEWAY_PORT:-8400}"
export REACT_WEB_UI_URL="${REACT_WEB_UI_URL:-http://localhost:8233}"
.venv/bin/python gateway.py --port "$port" --agents cli.demo:web_agents >.temporal/gateway.log 2>&1 &
gateway=$!
pids+=("$gateway")
healthy() { .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
  "http://127.0.0.1:$port/healthz" 2>/dev/null; }
for _ in $(seq 1 120); do
  healthy && break
  if ! kill -0 "$gateway" 2>/dev/null; then cat .temporal/gateway.log; exit 1; fi
  sleep 0.5
done
healthy || { echo "the gateway did not start; see .temporal/gateway.log"; exit 1; }
echo "Chat page: http://127.0.0.1:$port/   (Temporal Web UI: $REACT_WEB_UI_URL; Ctrl-C stops everything)"
wait "$gateway"
