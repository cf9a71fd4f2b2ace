"""The official `a2a-sdk` client on a test gateway, and the messages the A2A tests send."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types.a2a_pb2 import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse, Task
from google.protobuf.json_format import MessageToDict, ParseDict

from tests.gateway_helpers import GatewayServer, auth

__all__ = [
    "a2a_client",
    "answers",
    "final_task",
    "is_answer_delta",
    "message",
    "steps",
    "stream_events",
    "texts_of",
]


@asynccontextmanager
async def a2a_client(
    gw: GatewayServer, agent: str, token: str, *, streaming: bool = True
) -> AsyncIterator[Client]:
    """The SDK's client of `agent`, created from its card, calling with `token`."""
    http = httpx.AsyncClient(headers=auth(token), timeout=60)
    card_json = (await http.get(f"{gw.url}/a2a/{agent}/.well-known/agent-card.json")).json()
    card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
    client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


def message(
    text: str | None = None,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    data: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    parts: list[Part] | None = None,
) -> SendMessageRequest:
    """A user message (text and/or a data part) as a send request."""
    found = list(parts or [])
    if text is not None:
        found.append(new_text_part(text))
    if data is not None:
        found.append(new_data_part(dict(data)))
    msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=found)
    if context_id:
        msg.context_id = context_id
    if task_id:
        msg.task_id = task_id
    if metadata:
        msg.metadata.update(dict(metadata))
    return SendMessageRequest(message=msg)


async def stream_events(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    """Every event of a stream."""
    return [event async for event in events]


def texts_of(events: list[StreamResponse]) -> str:
    """The streamed text: the text parts of `working` status updates marked as deltas."""
    parts: list[str] = []
    for event in events:
        if event.HasField("status_update") and MessageToDict(event.status_update.metadata).get("delta"):
            parts.extend(p.text for p in event.status_update.status.message.parts if p.HasField("text"))
    return "".join(parts)


def final_task(events: list[StreamResponse]) -> Task:
    """The task the events describe, folded (status, artifacts)."""
    task = Task()
    for event in events:
        if event.HasField("task"):
            task.CopyFrom(event.task)
        elif event.HasField("status_update"):
            task.status.CopyFrom(event.status_update.status)
        elif event.HasField("artifact_update"):
            task.artifacts.append(event.artifact_update.artifact)
    return task


def data_parts(task_or_message: Message) -> list[dict[str, Any]]:
    """The data parts of a message, as JSON."""
    return [MessageToDict(p)["data"] for p in task_or_message.parts if p.HasField("data")]


def is_answer_delta(event: StreamResponse) -> bool:
    """A streamed delta of the second model call (the answer, after a tool call)."""
    update = event.status_update
    return (
        bool(MessageToDict(update.metadata).get("delta"))
        and MessageToDict(update.status.message.metadata).get("call") == 1
    )


def answers(events: list[StreamResponse]) -> list[str]:
    """The `answer` artifacts the events carry (a task's and artifact updates)."""
    found = [
        a.parts[0].text for e in events if e.HasField("task") for a in e.task.artifacts if a.name == "answer"
    ]
    found += [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    return found


def steps(events: list[StreamResponse]) -> list[str]:
    """The run steps (`event` of data parts) of the status updates, in order."""
    return [
        d[0]["event"]
        for e in events
        if e.HasField("status_update")
        for d in [data_parts(e.status_update.status.message)]
        if d
    ]
