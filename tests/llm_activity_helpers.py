"""Running the LLM activity in the SDK's `ActivityEnvironment`, on the scripted model."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import LLMActivities, default_registry
from activities.llm.message_cache import MessageCache
from contracts import LLMRequest, LLMResponse, ModelSettings, ScriptedCall, ScriptTurn
from conversation import Message
from payloads.blob_store import LocalDiskBlobStore

ROOT = Path(__file__).resolve().parent.parent
STORE = LocalDiskBlobStore(Path(tempfile.mkdtemp(prefix="react-test-llm-")))
llm_call = LLMActivities(default_registry(), MessageCache(STORE)).llm_call


def scripted(*turns: ScriptTurn, index: int = 0, tools: list[str] | None = None) -> LLMRequest:
    turn = turns[index] if index < len(turns) else None
    return LLMRequest(
        model="scripted",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=tools or [],
        iteration=index,
        scripted=ScriptedCall(index=index, length=len(turns), turn=turn),
    )


def environment(attempt: int = 1) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    return env


async def run_llm(request: LLMRequest, attempt: int = 1) -> LLMResponse:
    return await environment(attempt).run(llm_call, request)


async def llm_error(request: LLMRequest, attempt: int = 1) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await run_llm(request, attempt)
    return caught.value


def openai_request(api_base: str) -> LLMRequest:
    return LLMRequest(
        model="openai/gpt-4o-mini",
        system_prompt="You are terse.",
        messages=[Message(role="user", content="What is 6 * 7?")],
        tools=["calculator"],
        settings=ModelSettings(extra={"api_base": api_base}),
        timeout_s=10,
        iteration=1,
    )
