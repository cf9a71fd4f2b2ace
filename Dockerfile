# The Durable ReAct worker: runs the ReActRun workflow and its LLM/tool activities.
# Built by docker-compose.yml; it connects to the server named by TEMPORAL_ADDRESS.
FROM python:3.11-slim

# Use the image's Python (never download one), compile bytecode once at build time,
# copy rather than hard-link from a cache (there is none: UV_NO_CACHE keeps layers small).
ENV PYTHONUNBUFFERED=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True

# Your own tools (docs/tools.md): mount a folder of modules at /tools (it is on PYTHONPATH) and
# name them in REACT_TOOLS, as docker-compose.yml shows; or build an image FROM this one that
# installs your package: `RUN uv pip install --python /app/.venv/bin/python your-tools==1.0`.
# MCP servers: mount their JSON file and set REACT_MCP_CONFIG. A stdio MCP server's command
# (npx, uvx, ...) must exist in the image; HTTP servers need nothing.
ENV PYTHONPATH=/tools

# The bundled local model (the default when no model is chosen, docs/models.md) is left out
# unless built with `--build-arg LOCAL_MODEL=1`: llama.cpp is then compiled in the image
# (about 10 minutes on 2 cores; it needs a C/C++ compiler and CMake, installed here only then).
ARG LOCAL_MODEL=0
RUN if [ "$LOCAL_MODEL" = 1 ]; then \
        apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
        && rm -rf /var/lib/apt/lists/*; \
    fi

RUN pip install --no-cache-dir uv==0.13.9 \
    && useradd --create-home --uid 10001 agent \
    && mkdir /app && chown agent:agent /app

USER agent
WORKDIR /app

# Dependencies first, from the lock file only, so a source change does not reinstall them.
# Only the product's own dependencies: pyproject's default groups (`dev`: test tools; `bench`:
# profilers and the pydantic-ai peer) stay out of the image (`--no-default-groups`, not `--no-dev`).
COPY --chown=agent:agent pyproject.toml uv.lock ./
RUN uv sync --frozen --no-default-groups $([ "$LOCAL_MODEL" = 1 ] && echo --group local-model)

COPY --chown=agent:agent . .

# The environment's Python directly: `uv run` would sync the default groups into it at start-up.
ENV PATH=/app/.venv/bin:$PATH
CMD ["python", "worker.py"]
