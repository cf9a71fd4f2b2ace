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

RUN pip install --no-cache-dir uv==0.13.9 \
    && useradd --create-home --uid 10001 agent \
    && mkdir /app && chown agent:agent /app

USER agent
WORKDIR /app

# Dependencies first, from the lock file only, so a source change does not reinstall them.
COPY --chown=agent:agent pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev

COPY --chown=agent:agent . .

CMD ["uv", "run", "--frozen", "--no-dev", "python", "worker.py"]
