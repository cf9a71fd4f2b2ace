"""What litellm's bundled model map knows of a model: native structured output, prices, tokens, window.

Reads local data only (litellm is configured offline by `activities.llm._litellm_setup`); every
function loads litellm, so call them in a client or an activity, never in workflow code.
`activities.llm._litellm` re-exports them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from activities.llm._litellm_setup import configure, litellm
from activities.llm._openai_format import openai_message
from contracts.llm import SCRIPTED_MODEL, Usage
from conversation import ContextPolicy, Message
from conversation.budget import estimate_tokens
from conversation.media import attachment_tokens

T = TypeVar("T")
RESERVE_WINDOW_FRACTION = 4
"""`policy_for_model` reserves at most a quarter of the window for the answer."""


def _mapped(model: str, ask: Callable[[str], T], unknown: T) -> T:
    """What litellm's map answers about `model`; `unknown` for a model it does not map."""
    configure()
    try:
        return ask(model)
    except Exception:  # litellm raises several types for unmapped models (a local server's, a new one)
        return unknown


@functools.lru_cache(maxsize=256)
def native_schema(model: str) -> bool:
    """Whether litellm's model map says `model` takes a JSON Schema `response_format` (never scripted)."""
    supports = litellm.supports_response_schema  # pyright: ignore[reportUnknownMemberType]
    return model != SCRIPTED_MODEL and _mapped(model, lambda m: bool(supports(model=m)), False)


def _info(model: str) -> dict[str, Any]:
    """The model map's entry of `model` (empty for an unmapped model)."""
    entry = cast(Callable[..., Any], litellm.get_model_info)  # pyright: ignore[reportUnknownMemberType]
    return _mapped(model, lambda m: dict(entry(model=m)), {})


@functools.lru_cache(maxsize=256)
def _has_price(model: str) -> bool:
    info = _info(model) if model != SCRIPTED_MODEL else {}
    # A zero price is how litellm's map lists local servers' models (ollama/...): unknown, not free.
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


def priced(model: str, usage: Usage) -> Usage:
    """One call's `usage` with its cost from litellm's bundled prices; `unpriced_calls=1` without a price."""
    if _has_price(model):
        try:
            cost = litellm.cost_per_token(  # pyright: ignore[reportUnknownMemberType, reportPrivateImportUsage]
                model=model, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
            )
            return usage.model_copy(update={"cost_usd": float(cost[0]) + float(cost[1])})
        except Exception:  # a price litellm cannot apply: reported as unpriced, never a failed call
            pass
    return usage.model_copy(update={"cost_usd": 0.0, "unpriced_calls": 1})


def token_counts(model: str, messages: Sequence[Message]) -> list[int]:
    """Tokens of each message with `model`'s own tokenizer, for `token_estimator == "exact"`.

    Blocking (tokenizers load files): run it in a thread. A message litellm cannot
    count falls back to the heuristic, so one odd message never fails the call.
    """
    configure()
    counter = cast(Callable[..., int], litellm.token_counter)  # pyright: ignore[reportUnknownMemberType]
    counts: list[int] = []
    for message in messages:
        try:
            files = sum(attachment_tokens(a) for a in message.attachments or ())  # counted by reference
            counts.append(int(counter(model=model, messages=[openai_message(message)])) + files)
        except Exception:  # any tokenizer failure: estimate instead
            counts.append(estimate_tokens(message))
    return counts


def policy_for_model(model: str) -> ContextPolicy:
    """A context policy sized to `model`'s real context window, from litellm's bundled model map.

    The reserve is the model's maximum output, capped at a quarter of the window (some
    maps list output limits as large as the window). Unknown models, which litellm
    rejects, get the default policy: a small budget is the safe guess. Reads local data
    only; not for workflow code (call it in a client or an activity).
    """
    info = _info(model)
    window = info.get("max_input_tokens")
    if not isinstance(window, int) or window <= 1:
        return ContextPolicy()
    cap = window // RESERVE_WINDOW_FRACTION
    max_output = info.get("max_output_tokens")
    reserve = min(max_output, cap) if isinstance(max_output, int) and max_output > 0 else cap
    return ContextPolicy(max_input_tokens=window, reserve_output_tokens=reserve)
