"""Loading litellm once per process, off the event loop: its import takes seconds of CPU.

`activities.llm.llm_call` (a provider call), `activities.llm.models.scripted` (a turn that needs litellm's
types), `activities.llm.token_count` and the worker's background warm-up
(`activities.llm.llm_call.warm_litellm`) all load it through here.
"""

from __future__ import annotations

import asyncio
import importlib
import threading

_load_lock = threading.Lock()
_loaded = False


def load_litellm_now() -> None:
    """Import and configure litellm and the call routes in this thread (blocking; seconds the first time)."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        from activities.llm import _litellm
        from activities.llm.models import _scripted_provider

        importlib.import_module(
            "activities.llm._provider"
        )  # the routes' module, loaded before the first call
        _litellm.configure()
        _scripted_provider.register_scripted_provider()
        _loaded = True


async def load_litellm() -> None:
    """Make sure litellm is loaded, without blocking the event loop while it imports."""
    if not _loaded:
        await asyncio.to_thread(load_litellm_now)
