"""The published JSON Schemas (`schemas/`): current, complete, and true of real payloads on the wire."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from client import AgentConfig, Runs, Sessions
from clients.api import WORKFLOWS
from clients.schemas import SCHEMA_FOLDER, manifest, stale_files
from contracts import ThreadQuery
from contracts.errors import DESCRIPTIONS
from tests.helpers import call, turn
from tests.session_helpers import new_session_id


def schema(name: str) -> Draft202012Validator:
    document = json.loads((SCHEMA_FOLDER / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


def problems(name: str, value: Any) -> list[str]:
    """Where and why `value` does not match the schema file `name` (empty: it matches)."""
    found: Iterable[ValidationError] = schema(name).iter_errors(value)  # pyright: ignore[reportUnknownMemberType]
    return [f"{list(error.absolute_path)}: {error.message}" for error in found]


def assert_valid(name: str, value: Any) -> None:
    assert problems(name, value) == [], f"{name}: {problems(name, value)[:3]}"


def test_the_committed_schemas_are_current() -> None:
    stale = stale_files()
    assert stale == [], f"stale schemas {stale}: run .venv/bin/python scripts/export_schemas.py"


async def test_the_manifest_names_every_handler_of_the_workflows(client: Client, task_queue: str) -> None:
    # Controls are registered at run time, so ask live workflows (the SDK's metadata query).
    config = AgentConfig(model="scripted", script=[turn("42")])
    run = await Runs(client, task_queue=task_queue).start("What is 6 * 7?", config)
    await run.result()
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync("What is 6 * 7?", config=config)
    for api, workflow_id in zip(WORKFLOWS, (run.workflow_id, session.workflow_id), strict=True):
        metadata = await client.get_workflow_handle(workflow_id).query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
        definition = metadata.definition
        assert definition.type == api.name
        signals = {h.name for h in api.handlers if h.kind in ("signal", "signal_and_update")}
        updates = {h.name for h in api.handlers if h.kind in ("update", "signal_and_update")}
        queries = {h.name for h in api.handlers if h.kind == "query"}
        assert {d.name for d in definition.signal_definitions} == signals
        assert {d.name for d in definition.update_definitions} == updates
        own_queries = {d.name for d in definition.query_definitions if not d.name.startswith("__")}
        assert own_queries == queries
    files = json.loads((SCHEMA_FOLDER / "api.json").read_text(encoding="utf-8"))
    assert files == manifest()
    for api in files["workflows"].values():
        for handler in api["handlers"].values():
            for name in (handler["argument"], handler["result"]):
                assert name is None or (SCHEMA_FOLDER / name).is_file(), name


def test_every_error_code_is_published() -> None:
    codes = {
        entry["const"] for entry in json.loads((SCHEMA_FOLDER / "error_codes.json").read_text())["oneOf"]
    }
    assert set(DESCRIPTIONS) <= codes and "snapshot_expired" in codes
    assert_valid("error_codes.json", "payload_too_large")
    assert problems("error_codes.json", "no_such_code")


async def test_real_payloads_match_their_schemas(client: Client, task_queue: str) -> None:
    # What another service sends: plain JSON, no Python models.
    assert_valid("RunInput.json", {"query": "What is 6 * 7?", "config": {"model": "openai/gpt-4o-mini"}})
    assert_valid("SteerInput.json", {"content": "Answer in French."})
    assert problems("SteerInput.json", {"content": "x" * 100_001})
    assert problems("RunInput.json", {"query": "q"})  # no config

    config = AgentConfig.model_validate(
        {
            "model": "scripted",
            "tools": ["calculator"],
            "script": [turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]), turn("42")],
        }
    )
    run = await Runs(client, task_queue=task_queue).start("What is 6 * 7?", config)
    await run.result()
    raw = client.get_workflow_handle(run.workflow_id)
    history = await raw.fetch_history()
    [completed] = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    ]
    [payload] = completed.workflow_execution_completed_event_attributes.result.payloads
    assert_valid("RunResult.json", json.loads(payload.data))  # the bytes history holds
    for name, query, argument in (
        ("RunState.json", "state", None),
        ("Trace.json", "trace", None),
        ("Context.json", "context", None),
        ("ThreadPage.json", "thread", ThreadQuery(limit=2)),
    ):
        answer = await (raw.query(query, argument) if argument else raw.query(query))
        assert_valid(name, answer)

    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    await session.ask_sync(
        "Hi", config=AgentConfig.model_validate({"model": "scripted", "script": [turn("Hello")]})
    )
    raw_session = client.get_workflow_handle(session.workflow_id)
    assert_valid("SessionStatus.json", await raw_session.query("status"))
    assert_valid("RequestRecordList.json", await raw_session.query("requests"))
    assert_valid("Ack.json", (await session.steer("anyone?")).model_dump(mode="json"))
