"""A transformer's answer carrying a credential never reaches history (real server, real worker).

The `transform_request` activity runs as a local activity: its result is written to
history (the local-activity marker) the moment it returns. The run refused such an
answer, but only after the marker held the key; now the activity refuses it first, and
its error names the setting, never the value.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
import pytest_asyncio
from temporalio.client import Client

from activities.llm.request_transformers import RequestTransformers
from contracts.agent import ModelSettings
from contracts.transform import RequestChanges, TransformInput
from tests.agent_tools import registry_for_tests
from tests.helpers import start_run, turn
from worker import build_worker

KEY = "sk-live-0123456789abcdefXYZ"
ENV_SECRET = "env-secret-value-7f3a9c1e5b2d8f4a"


def key_in_extra(request: TransformInput) -> RequestChanges:
    return RequestChanges(settings=ModelSettings(extra={"api_key": KEY}))


def key_in_prompt(request: TransformInput) -> RequestChanges:
    return RequestChanges(system_prompt=f"Use the key {KEY} when asked.")


def env_secret_in_prompt(request: TransformInput) -> dict[str, object]:
    return {"system_prompt": f"The password is {ENV_SECRET}."}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def queue(client: Client) -> AsyncIterator[str]:
    registered = RequestTransformers()
    for function in (key_in_extra, key_in_prompt, env_secret_in_prompt):
        registered.register(function.__name__, function)
    name = f"transformer-keys-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        client,
        task_queue=name,
        registry=registry_for_tests(),
        transformers=registered,
        max_cached_workflows=0,
    )
    async with worker:
        yield name


@pytest.mark.parametrize("transformer", ["key_in_extra", "key_in_prompt", "env_secret_in_prompt"])
async def test_a_credential_in_the_answer_is_refused_before_history_holds_it(
    client: Client, queue: str, transformer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_PASSWORD", ENV_SECRET)
    handle = await start_run(client, queue, [turn("never")], request_transformer=transformer)
    result = await handle.result()
    assert result.status == "failed" and result.outcome.error is not None
    assert result.outcome.error.type == "transformer_error"
    assert "credential" in result.outcome.error.message
    history = "\n".join(_texts(json.loads((await handle.fetch_history()).to_json())))
    assert "key_in" in history or "env_secret" in history  # the search does see the history's payloads
    assert KEY not in history and ENV_SECRET not in history


def _texts(node: Any) -> list[str]:
    """Every string of the history's JSON, payload data decoded (it is base64 there)."""
    if isinstance(node, dict):
        found: list[str] = []
        for key, value in cast(dict[str, Any], node).items():
            if key == "data" and isinstance(value, str):
                found.append(base64.b64decode(value).decode(errors="replace"))
            found.extend(_texts(value))
        return found
    if isinstance(node, list):
        return [text for item in cast(list[Any], node) for text in _texts(item)]
    return [node] if isinstance(node, str) else []
