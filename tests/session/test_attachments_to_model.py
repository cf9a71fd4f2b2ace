"""Attachments reach the model through a session (real server, real worker, the worker's payload store).

The scripted model's `describe_input` turn answers with what its call received, so these tests
check the bytes' sha256 as the model got them; the histories are read to prove no bytes are in them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from clients.errors import RejectedError
from clients.sessions import Sessions
from contracts import WORKFLOW_TYPE, RunInput, ScriptTurn
from contracts.errors import UNSUPPORTED_MEDIA_TYPE
from contracts.session import AskInput
from conversation import MessageEntry
from conversation.attachments import Attachment
from hosting.plugin import DurableReactPlugin
from payloads.blob_store import BlobStore
from settings.deployment import load_settings
from tests.fake_openai import FakeOpenAI
from tests.session_helpers import config, new_session_id, script, session_thread
from tests.stored_attachments import PNG, pdf_with_text, stored

DESCRIBE = ScriptTurn(describe_input=True)


def media_parts(answer: str | None) -> list[list[dict[str, Any]]]:
    """The non-text parts of each user message the model was sent."""
    assert answer is not None
    messages: list[dict[str, Any]] = json.loads(answer)
    return [[p for p in m["parts"] if p["kind"] != "text"] for m in messages if m["role"] == "user"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def history_bytes(client: Client, workflow_id: str) -> bytes:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return b"".join(event.SerializeToString() for event in history.events)


async def test_an_image_and_a_pdf_reach_the_model_and_no_history_holds_their_bytes(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    pdf = pdf_with_text("Invoice total 99")
    image = await stored(store, PNG, "dot.png", "image/png")
    document = await stored(store, pdf, "invoice.pdf", "application/pdf")
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    ask = AskInput(query="What are these?", attachments=[image, document], overrides=script(DESCRIBE))
    first = await session.ask_sync(ask, config=config())
    assert first.status == "completed"
    ((seen_image, seen_pdf),) = media_parts(first.result)
    assert (seen_image["kind"], seen_image["sha256"], seen_image["bytes"]) == ("image", sha(PNG), len(PNG))
    assert (seen_pdf["kind"], seen_pdf["sha256"], seen_pdf["name"]) == ("file", sha(pdf), "invoice.pdf")

    # The thread keeps the references, and a later call still sends the bytes.
    second = await session.ask_sync(AskInput(query="And again?", overrides=script(DESCRIBE)))
    first_turn, second_turn = media_parts(second.result)
    assert [p["sha256"] for p in first_turn] == [sha(PNG), sha(pdf)] and second_turn == []
    users = [
        e.payload
        for e in await session_thread(client.get_workflow_handle(session.workflow_id))
        if isinstance(e, MessageEntry) and e.payload.role == "user"
    ]
    assert users[0].attachments == [image, document]

    marker = b"ATTACHMENT-MARKER-7f3a9c"
    encoded = base64.b64encode(PNG)[:40]
    for workflow_id in (session.workflow_id, first.run_workflow_id, second.run_workflow_id):
        recorded = await history_bytes(client, workflow_id)
        assert marker not in recorded and encoded not in recorded, workflow_id
        assert base64.b64encode(pdf)[:40] not in recorded


async def test_a_fork_keeps_the_references_and_its_model_still_sees_the_bytes(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    image = await stored(store, PNG, "dot.png", "image/png")
    sessions = Sessions(client, task_queue=task_queue)
    parent = sessions.get(new_session_id())
    ask = AskInput(query="Look", attachments=[image], overrides=script(ScriptTurn(content="a dot")))
    assert (await parent.ask_sync(ask, config=config())).status == "completed"
    forked = await parent.fork()
    child = sessions.get(forked.session_id)
    answer = await child.ask_sync(AskInput(query="What was it?", overrides=script(DESCRIBE)))
    assert [p["sha256"] for p in media_parts(answer.result)[0]] == [sha(PNG)]


async def test_a_type_no_model_takes_is_refused_at_ask_time_with_nothing_asked(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    assert (
        await session.ask_sync("hello", config=config(), overrides=script(ScriptTurn(content="hi")))
    ).status == "completed"
    handle = client.get_workflow_handle(session.workflow_id)
    before = await session_thread(handle)
    archive: Attachment = await stored(store, b"PK\x03\x04 not for models", "a.zip", "application/zip")
    with pytest.raises(RejectedError) as refused:
        await session.ask(AskInput(query="unpack", attachments=[archive], overrides=script(DESCRIBE)))
    assert refused.value.code == UNSUPPORTED_MEDIA_TYPE
    assert "scripted" in str(refused.value) and "application/zip" in str(refused.value)
    assert await session_thread(handle) == before
    assert len(await session.requests()) == 1


async def test_an_image_for_a_model_that_takes_none_is_refused_at_ask_time(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    image = await stored(store, PNG, "dot.png", "image/png")
    session = Sessions(client, task_queue=task_queue).get(new_session_id())
    text_only = config(model="openai/gpt-3.5-turbo")
    with pytest.raises(RejectedError) as refused:
        await session.ask(AskInput(query="Look", attachments=[image]), config=text_only)
    assert refused.value.code == UNSUPPORTED_MEDIA_TYPE
    assert "openai/gpt-3.5-turbo" in str(refused.value) and "image/png" in str(refused.value)
    assert await session.requests() == []
    assert await session_thread(client.get_workflow_handle(session.workflow_id)) == []


async def test_a_run_started_directly_refuses_an_image_its_model_does_not_take(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    image = await stored(store, PNG, "dot.png", "image/png")
    run = RunInput(query="Look", config=config(model="openai/gpt-3.5-turbo"), query_attachments=[image])
    handle = await client.start_workflow(
        WORKFLOW_TYPE, run, id=f"attach-run-{uuid.uuid4().hex}", task_queue=task_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == UNSUPPORTED_MEDIA_TYPE
    assert not any(
        e.activity_task_scheduled_event_attributes.activity_type.name == "llm_call"
        for e in (await handle.fetch_history()).events
        if e.HasField("activity_task_scheduled_event_attributes")
    )


async def test_the_deployment_says_what_a_model_takes_over_litellms_map(
    client: Client, store: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # REACT_MODEL_MEDIA: gpt-3.5-turbo (text-only in litellm's map) reads images in this deployment,
    # gpt-4o-mini (a vision model there) none: the ask-time check and the parts sent follow it.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-model-media")
    settings = load_settings({"REACT_MODEL_MEDIA": "openai/gpt-3.5-turbo=images,openai/gpt-4o-mini=none"})
    image = await stored(store, PNG, "dot.png", "image/png")
    task_queue = f"model-media-{uuid.uuid4().hex[:8]}"
    plugin = DurableReactPlugin(settings=settings, store=store)
    async with (
        FakeOpenAI() as server,
        Worker(client, task_queue=task_queue, plugins=[plugin], max_cached_workflows=0),
    ):
        sessions = Sessions(client, task_queue=task_queue)
        provider = {"extra": {"api_base": server.base_url}}
        taking = sessions.get(new_session_id())
        accepted = await taking.ask(
            AskInput(query="Look", attachments=[image]),
            config=config(model="openai/gpt-3.5-turbo", model_settings=provider),
        )
        assert (await taking.await_result(accepted.request_id)).status == "completed"
        refusing = sessions.get(new_session_id())
        with pytest.raises(RejectedError) as refused:
            await refusing.ask(
                AskInput(query="Look", attachments=[image]),
                config=config(model="openai/gpt-4o-mini", model_settings=provider),
            )
    assert refused.value.code == UNSUPPORTED_MEDIA_TYPE and "openai/gpt-4o-mini" in str(refused.value)
    assert len(server.requests) == 1, "the refused ask reached no model"
    sent = server.requests[0].body["messages"][-1]["content"]
    assert [part["type"] for part in sent] == ["text", "text", "image_url"]
    assert sent[2]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
