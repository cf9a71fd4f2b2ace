"""A config is checked whole (issue 39): a field `AgentConfig` (or a model in it) lacks is refused by name.

Before, pydantic dropped it silently, so a misspelt `system_promt` ran the agent without its
prompt. Fields `AgentConfig` once had and no longer has (`RETIRED_CONFIG_FIELDS`) are dropped
instead, so recorded histories keep decoding (`tests/replay/test_replay.py` replays them all).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from contracts import AgentConfig
from contracts.agent import without_fields
from tests.run.test_robustness_inputs import CONFIG, fails_once, raw

UNKNOWN: list[tuple[str, dict[str, Any]]] = [
    ("system_promt", {"system_promt": "You are terse."}),
    ("model_settings.temprature", {"model_settings": {"temprature": 0.1}}),
    ("script.0.contnet", {"script": [{"contnet": "done"}]}),
    ("script.0.tool_calls.0.argumnets", {"script": [{"tool_calls": [{"name": "echo", "argumnets": {}}]}]}),
    (
        "agents.0.config.system_promt",
        {"agents": [{"name": "helper", "config": {"model": "x", "system_promt": ""}}]},
    ),
    ("output.schema", {"output": {"json_schema": {"type": "object"}, "schema": {}}}),
]
"""(where the unknown field is, the config fields that carry it)."""


@pytest.mark.parametrize(("where", "fields"), UNKNOWN, ids=[where for where, _ in UNKNOWN])
def test_an_unknown_field_is_refused_naming_it(where: str, fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as refused:
        AgentConfig.model_validate({"model": "scripted", **fields})
    (error,) = refused.value.errors()
    assert error["type"] == "extra_forbidden"
    assert ".".join(map(str, error["loc"])) == where


async def test_a_run_started_with_an_unknown_field_fails_at_once_naming_it(
    client: Client, task_queue: str
) -> None:
    async def start(where: str, fields: dict[str, Any]) -> None:
        handle = await raw(client).start_workflow(
            "ReActRun",
            {"query": "q", "config": {**CONFIG, **fields}},
            id=f"unknown-field-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        await fails_once(handle, "invalid_input", f"config.{where}")

    await asyncio.gather(*(start(where, fields) for where, fields in UNKNOWN[:3]))


def test_retired_fields_are_dropped_and_nothing_else() -> None:
    retired = frozenset({"old_field"})
    assert without_fields({"model": "m", "old_field": 1}, retired) == {"model": "m"}
    assert without_fields({"model": "m", "system_promt": ""}, retired) == {"model": "m", "system_promt": ""}
    assert without_fields([1], retired) == [1]
