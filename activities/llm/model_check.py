"""Whether a chosen model can be used from this process: its API key, or the bundled model's install.

For the worker's start-up check and the demo. Asking about a provider model imports
litellm (seconds, through `activities.llm._litellm`), so callers ask only when a model was
chosen; the scripted and bundled models need no litellm.
"""

from __future__ import annotations

import os
from typing import Any

from activities.llm.models.local_model import BUNDLED_MODEL, missing_install


def key_problem(model: str, api_base: str | None = None) -> str | None:
    """One line saying what `model` lacks in this process's environment, or None when it has it.

    Only API keys count: other credentials (cloud roles, ADC) may come from elsewhere.
    """
    if model in ("scripted", BUNDLED_MODEL):
        return None
    from activities.llm import _litellm

    _litellm.configure()
    litellm: Any = _litellm.litellm
    try:
        provider = str(litellm.get_llm_provider(model)[1])
    except Exception:
        return f"{model!r} is not a litellm model string: use provider/model, e.g. openai/gpt-4o-mini"
    found: dict[str, Any] = litellm.validate_environment(model, api_base=api_base)
    missing: list[Any] = found.get("missing_keys") or []
    keys = [str(name) for name in missing if str(name).endswith("_API_KEY")]
    if not keys:
        return None
    problem = f"model {model} needs {' or '.join(keys)} in the worker's environment (not set)"
    if provider == "openai" and api_base:
        name = model.split("/", 1)[-1]
        problem += f"; for a local OpenAI-compatible server without a key use hosted_vllm/{name}"
    return problem


def configured_model_problem() -> str | None:
    """What the model $REACT_MODEL names lacks in this environment (None: usable, or none named)."""
    model = os.environ.get("REACT_MODEL", "").strip()
    if not model:
        return None
    if model == BUNDLED_MODEL:
        return missing_install()
    return key_problem(model, os.environ.get("REACT_API_BASE", "").strip() or None)
