"""Helpers for the session tests: a session per test, scripted asks, reading the session."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from temporalio.client import Client, WorkflowHandle

from clients import sessions
from contracts import AgentConfig, ScriptTurn, Segment, ThreadPage, ThreadQuery
from contracts.session import AskAccepted, AskInput, RequestRecord, RequestResult, SessionStatus
from conversation import ContextModifyInput, Entry
from payloads.blob_store import BlobStore


def new_session_id() -> str:
    return sessions.session_workflow_id(f"test-{uuid.uuid4().hex[:10]}")


def config(**fields: Any) -> AgentConfig:
    return AgentConfig.model_validate({"model": "scripted", **fields})


def script(*turns: ScriptTurn) -> dict[str, Any]:
    """Overrides giving one request its own script."""
    return {"script": [t.model_dump(mode="json") for t in turns]}


async def ask(
    client: Client, task_queue: str, session_id: str, query: str, *turns: ScriptTurn, **ask_fields: Any
) -> AskAccepted:
    return await sessions.ask(
        client,
        session_id,
        AskInput(query=query, overrides=script(*turns), **ask_fields),
        agent_id="test-agent",
        config=config(system_prompt="You are a test agent.", tools=["calculator", "echo"]),
        task_queue=task_queue,
    )


async def ask_sync(
    client: Client, task_queue: str, session_id: str, query: str, *turns: ScriptTurn
) -> RequestResult:
    accepted = await ask(client, task_queue, session_id, query, *turns)
    return await sessions.await_result(client, session_id, accepted.request_id)


async def usage_rows_settled(handle: WorkflowHandle[Any, Any]) -> None:
    """Wait until no activity nor workflow task of the session is pending (usage rows are written aside)."""
    for _ in range(200):
        described = (await handle.describe()).raw_description
        if not described.pending_activities and not described.HasField("pending_workflow_task"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the session's activities were still pending after 10 s")


async def status(handle: WorkflowHandle[Any, Any]) -> SessionStatus:
    return await handle.query("status", result_type=SessionStatus)


async def session_thread(handle: WorkflowHandle[Any, Any], store: BlobStore | None = None) -> list[Entry]:
    """The session's whole thread, page by page; archived segments are read from `store`."""
    entries: list[Entry] = []
    since: int | None = 0
    while since is not None:
        page = await handle.query("thread", ThreadQuery(since_seq=since), result_type=ThreadPage)
        if page.segment is not None:
            assert store is not None, "the thread has archived segments: pass the payload store"
            segment = Segment.model_validate_json(await store.get(page.segment.digest))
            entries.extend(e for e in segment.entries if e.seq >= since)
        entries.extend(page.entries)
        since = page.next_seq
    return entries


async def requests(handle: WorkflowHandle[Any, Any]) -> list[RequestRecord]:
    return await handle.query("requests", result_type=list[RequestRecord])


def replace_op(op_id: str, text: str) -> ContextModifyInput:
    """A `context_modify` replacing the active lane with one user message."""
    return ContextModifyInput.model_validate(
        {
            "op_id": op_id,
            "operation": {
                "type": "replace",
                "result_context": {"messages": [{"role": "user", "content": text}]},
            },
        }
    )
