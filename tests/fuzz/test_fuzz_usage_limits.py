"""Unknown fields in `usage_limits` are refused by name: a typo must not mean no cap.

Before, `{"per_request": {"max_cost": 0.01}}` (for `max_cost_usd`) was accepted and capped
nothing. Unit checks of the model, random unknown keys at both levels, and run starts
through the real server (sent as raw JSON, as a client in another language would).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from temporalio.client import Client

from contracts import WORKFLOW_TYPE
from contracts.agent import AgentConfig, UsageBudget, UsageLimits

CONFIG: dict[str, Any] = {"model": "scripted", "script": [{"content": "never used"}]}
KNOWN = set(UsageLimits.model_fields) | set(UsageBudget.model_fields)
UNKNOWN = st.text(min_size=1, max_size=20).filter(lambda key: key not in KNOWN)
TYPOS = [
    {"per_request": {"max_cost": 0.01}},
    {"per_request": {"max_tokens": 10}},
    {"per_session": {"max_calls": 1}},
    {"per_run": {"max_cost_usd": 0.01}},
    {"per_request": {"max_cost_usd": 0.01}, "per_sesion": {"max_llm_calls": 1}},
]


@pytest.mark.parametrize("limits", TYPOS, ids=str)
def test_a_typo_is_refused_naming_the_field(limits: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as refused:
        AgentConfig.model_validate({**CONFIG, "usage_limits": limits})
    assert "Extra inputs are not permitted" in str(refused.value)


@settings(max_examples=50, deadline=None)
@given(key=UNKNOWN, level=st.sampled_from(["top", "per_request", "per_session"]), value=st.integers(1, 9))
def test_any_unknown_key_at_any_level_is_refused(key: str, level: str, value: int) -> None:
    limits: dict[str, Any] = {key: value} if level == "top" else {level: {key: value}}
    with pytest.raises(ValidationError):
        UsageLimits.model_validate(limits)


def test_the_known_fields_still_cap() -> None:
    limits = UsageLimits.model_validate(
        {"per_request": {"max_cost_usd": 0.5}, "per_session": {"max_llm_calls": 3}}
    )
    assert limits.per_request.max_cost_usd == 0.5 and limits.per_session.max_llm_calls == 3


@pytest.mark.parametrize("limits", TYPOS[:2], ids=str)
async def test_a_run_started_with_a_typo_is_refused_invalid_input(
    client: Client, task_queue: str, limits: dict[str, Any]
) -> None:
    handle = await client.start_workflow(
        WORKFLOW_TYPE,
        {"query": "q", "config": {**CONFIG, "usage_limits": limits}},
        id=f"usage-typo-{uuid.uuid4().hex[:8]}",
        task_queue=task_queue,
    )
    with pytest.raises(Exception) as refused:
        await asyncio.wait_for(handle.result(), 60)
    cause = getattr(refused.value, "cause", None)
    assert getattr(cause, "type", None) == "invalid_input"
    assert "usage_limits" in str(cause)
