"""Importing litellm the product's way, and configuring it once: the only module that imports litellm.

Importing this module imports litellm (seconds of CPU), so nothing on the worker's
start-up path imports it (see `activities.llm._litellm`, the door the activities use).
Configuration happens once, on first use (`configure`):

* no network at import or call time: litellm's model cost map and Anthropic beta-header
  config come from the copies bundled with it, Hugging Face tokenizers are never
  downloaded (token counts fall back to tiktoken's bundled encoding);
* no "Give Feedback / Get Help" banner; litellm logs through the application's handlers
  (where the worker redacts secrets), at WARNING unless `LITELLM_LOG` says otherwise;
* a zero-cost price for the `scripted` test provider (`activities.llm.models.scripted` registers
  the provider itself).
"""

# ruff: noqa: E402 - litellm reads the environment variables set below when it is imported.
from __future__ import annotations

import os

# Before litellm is imported: each of these makes litellm use its bundled copy instead of
# fetching one from GitHub (at import for the cost map, at the first Anthropic call for
# the beta headers, in proxy features for the rest).
for _variable in (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS",
    "LITELLM_LOCAL_POLICY_TEMPLATES",
    "LITELLM_LOCAL_BLOG_POSTS",
):
    os.environ.setdefault(_variable, "True")

import logging
import threading

import litellm
from litellm.exceptions import (
    AuthenticationError,
    BadRequestError,
    ContentPolicyViolationError,
    ContextWindowExceededError,
    InternalServerError,
    RateLimitError,
    Timeout,
)
from litellm.litellm_core_utils.core_helpers import (  # pyright: ignore[reportMissingTypeStubs]
    map_finish_reason,
)
from litellm.llms.custom_llm import CustomLLM
from litellm.llms.openai.common_utils import OpenAIError  # pyright: ignore[reportMissingTypeStubs]
from litellm.types.utils import ModelResponse  # pyright: ignore[reportMissingTypeStubs]

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ContentPolicyViolationError",
    "ContextWindowExceededError",
    "CustomLLM",
    "InternalServerError",
    "ModelResponse",
    "OpenAIError",
    "RateLimitError",
    "Timeout",
    "configure",
    "is_configured",
    "litellm",
    "map_finish_reason",
]

SCRIPTED_PROVIDER = "scripted"
SCRIPTED_LITELLM_MODEL = f"{SCRIPTED_PROVIDER}/{SCRIPTED_PROVIDER}"

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_SCRIPTED_PRICE = {
    "litellm_provider": SCRIPTED_PROVIDER,
    "mode": "chat",
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "cache_creation_input_token_cost": 0.0,
    "cache_read_input_token_cost": 0.0,
}

_configure_lock = threading.Lock()
_configured = False


def configure() -> None:
    """Configure litellm for the worker, once (thread-safe; later calls return at once)."""
    global _configured
    if _configured:
        return
    with _configure_lock:
        if _configured:
            return
        litellm.suppress_debug_info = True
        litellm.disable_hf_tokenizer_download = True
        # A zero-cost price entry: without one, litellm searches its whole model map for a
        # price after every scripted call (about a quarter of the call's CPU) and finds none.
        litellm.register_model({SCRIPTED_LITELLM_MODEL: _SCRIPTED_PRICE})  # pyright: ignore[reportUnknownMemberType]
        level = logging.getLevelNamesMapping().get(os.environ.get("LITELLM_LOG", "").upper(), logging.WARNING)
        for name in _LITELLM_LOGGERS:
            logger = logging.getLogger(name)
            # litellm's own handler printed every record a second time, unredacted by ours: its
            # records now reach the application's handlers (and their redaction) once, and
            # not a line per call at INFO.
            logger.handlers.clear()
            logger.setLevel(level)
        _configured = True


def is_configured() -> bool:
    """Whether `configure` has run (the door is ready for calls)."""
    return _configured
