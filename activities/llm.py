"""The LLM activity: one chat completion through litellm, with provider errors classified.

litellm reads API keys from the worker's environment (`OPENAI_API_KEY`, ...); nothing
secret travels in `LLMRequest` or `LLMResponse`, and provider error text is redacted
before it becomes an error, so the Temporal history and Web UI stay safe to show.
litellm's own retries are off: Temporal's retry policy is the one retry loop (see
`activities.llm_errors`).

This module does not import litellm: registering the activity costs nothing at worker
start-up. `activities._litellm` (the one module that imports it) is loaded on the first
call, in a thread while the call heartbeats, or earlier by `warm_litellm`, which the
worker runs in the background once it polls.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from temporalio import activity

from activities._heartbeat import with_heartbeat
from contracts.activities import LLM_ACTIVITY
from contracts.llm import LLMRequest, LLMResponse

DOOR = "activities._litellm"
_log = logging.getLogger(__name__)


def load_litellm_now() -> None:
    """Import and configure litellm in this thread (blocking; seconds the first time)."""
    from activities import _litellm

    _litellm.configure()


async def load_litellm() -> None:
    """Make sure litellm is loaded, without blocking the event loop while it imports."""
    # A module still being imported by another thread is in sys.modules too, but not configured.
    door = sys.modules.get(DOOR)
    ready = getattr(door, "is_configured", None)
    if not (callable(ready) and ready()):
        await asyncio.to_thread(load_litellm_now)


def warm_litellm() -> None:
    """Load litellm and make one scripted call, so the first real call pays neither.

    For a background thread (it blocks for seconds). Never raises: a failed warm-up only
    means the first LLM call loads litellm itself.
    """
    try:
        load_litellm_now()
        from activities import _litellm

        asyncio.run(_litellm.complete(_litellm.warm_up_request(), attempt=1))
    except Exception:
        _log.warning("litellm warm-up failed; the first LLM call will load it", exc_info=True)


@activity.defn(name=LLM_ACTIVITY)
async def llm_call(request: LLMRequest) -> LLMResponse:
    """Ask the model for the next step: a final answer and/or tool calls.

    Raises:
        ApplicationError: The provider failed; `llm_errors.classify` decides the error
            code, whether Temporal retries it and after how long.
    """
    return await with_heartbeat(complete(request, attempt=activity.info().attempt))


async def complete(request: LLMRequest, *, attempt: int) -> LLMResponse:
    """One chat completion through litellm, loading it first if needed (see `_litellm.complete`)."""
    await load_litellm()
    from activities import _litellm

    return await _litellm.complete(request, attempt=attempt)
