"""The `count_tokens` activity: exact token counts for `token_estimator: exact` policies.

Tokenizers are loaded by litellm, which is I/O and library state that workflow code must
not touch; the workflow caches the counts per message, so each message is counted once.
"""

from __future__ import annotations

import asyncio

from temporalio import activity

from activities._heartbeat import with_heartbeat
from activities.llm.litellm_loading import load_litellm
from contracts.activities import COUNT_TOKENS_ACTIVITY
from contracts.llm import SCRIPTED_MODEL, CountTokensRequest
from conversation.budget import estimate_tokens


@activity.defn(name=COUNT_TOKENS_ACTIVITY)
async def count_tokens(request: CountTokensRequest) -> list[int]:
    """One count per message, with the model's tokenizer (the heuristic for the scripted model)."""
    if request.model == SCRIPTED_MODEL:
        return [estimate_tokens(m) for m in request.messages]
    await with_heartbeat(load_litellm())
    from activities.llm import _litellm

    return await asyncio.to_thread(_litellm.token_counts, request.model, request.messages)
