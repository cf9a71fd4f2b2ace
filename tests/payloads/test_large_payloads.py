"""Runs and sessions of realistic sizes complete; over-limit inputs are refused by name (real server).

Before issue 7 each of these wedged a workflow for good (PAYLOADS_TOO_LARGE or "Blob
data size exceeds limit" on every workflow task). Payloads over the claim-check
threshold (128 KiB) now go to the payload store and history keeps a reference.

A tool's result reaches the model (and the thread) cut to `MAX_RESULT_CHARS` (64 KiB)
of JSON by design, so six tools returning 256 KB each put 6 x 64 KiB in the thread.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from typing import Any

from pydantic_core import to_json
from temporalio.client import Client, RPCTimeoutOrCancelledError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from clients.update_retry import execute_update
from contracts import Ack, RunResult
from contracts.limits import MAX_SYSTEM_PROMPT_CHARS
from contracts.session import SessionStatus
from contracts.tools import MAX_RESULT_CHARS
from conversation import Context, ContextOpEntry
from payloads.blob_store import BlobStore
from tests.helpers import call, message_payloads, messages, start_run, thread_of, turn, workflow_task_failures
from tests.session_helpers import ask_sync, new_session_id, session_thread, usage_rows_settled

KB = 1_000
MB = 1_000_000


def big(size: int, seed: int) -> str:
    """`size` random printable characters (random, so no compression or dedupe helps)."""
    alphabet = string.ascii_letters + string.digits + " "
    return "".join(random.Random(seed).choices(alphabet, k=size))


async def finished(handle: WorkflowHandle[Any, RunResult]) -> RunResult:
    """The run's result, after checking it completed with no failed workflow task in its history."""
    result = await handle.result()
    assert result.status == "completed", result.outcome
    assert await workflow_task_failures(handle) == []
    return result


def tool_results(thread: list[Any]) -> list[Any]:
    """The decoded results the model got from each tool message of the thread."""
    return [json.loads(e.payload.content)["result"] for e in thread if e.payload.role == "tool"]


# ---- runs that carry megabytes ------------------------------------------------------------------


async def test_a_1_5_mb_final_answer(client: Client, task_queue: str) -> None:
    answer = big(int(1.5 * MB), seed=1)
    handle = await start_run(client, task_queue, [turn(answer)])
    result = await finished(handle)
    assert result.result == answer
    assert messages(await thread_of(handle)) == [("user", "What is 6 * 7?"), ("assistant", answer)]
    history = await handle.fetch_history()
    assert sum(e.ByteSize() for e in history.events) < 100 * KB, "history holds references, not the answer"


async def test_1_5_mb_of_tool_arguments(client: Client, task_queue: str) -> None:
    text = big(int(1.5 * MB), seed=2)
    script = [turn(tool_calls=[call("length", {"text": text})]), turn("done")]
    handle = await start_run(client, task_queue, script, tools=["length"])
    result = await finished(handle)
    assert result.result == "done"
    thread = await thread_of(handle)
    [assistant] = [p for p in message_payloads(thread) if p.role == "assistant" and p.tool_calls]
    assert assistant.tool_calls is not None
    assert json.loads(assistant.tool_calls[0].arguments) == {"text": text}
    assert tool_results(thread) == [len(text)], "the tool received every character"


async def test_six_tool_results_of_256_kb_in_one_round(client: Client, task_queue: str) -> None:
    size = 256 * 1024
    texts = [big(size, seed=10 + i) for i in range(6)]
    calls = [call("echo", {"text": t}, f"call-{i}") for i, t in enumerate(texts)]
    handle = await start_run(client, task_queue, [turn(tool_calls=calls), turn("done")], tools=["echo"])
    await finished(handle)
    thread = await thread_of(handle)
    results = tool_results(thread)
    assert len(results) == 6
    # By design the model (and so the thread) gets each result cut to 64 KiB of JSON, with a marker.
    for text, result in zip(texts, results, strict=True):
        cut = len(to_json(text)) - MAX_RESULT_CHARS
        assert result == to_json(text).decode()[:MAX_RESULT_CHARS] + f"…[truncated: {cut} more characters]"
    assert [p.tool_call_id for p in message_payloads(thread) if p.role == "tool"] == [c["id"] for c in calls]


async def test_three_rounds_of_a_megabyte_each(client: Client, task_queue: str) -> None:
    texts = [big(MB, seed=20 + i) for i in range(3)]
    script = [*(turn(tool_calls=[call("length", {"text": t})]) for t in texts), turn("done")]
    handle = await start_run(client, task_queue, script, tools=["length"])
    result = await finished(handle)
    assert result.result == "done"
    thread = await thread_of(handle)
    assert tool_results(thread) == [MB] * 3
    assert [e.seq for e in thread] == list(range(8))
    arguments = [p.tool_calls[0].arguments for p in message_payloads(thread) if p.tool_calls]
    assert [json.loads(a)["text"] for a in arguments] == texts
    assert [e.seq for e in result.entries] == list(range(8)), "the result carries every entry once"


# ---- sessions: a huge system prompt, a large replace op ---------------------------------------------


async def send(
    handle: WorkflowHandle[Any, Any], name: str, payload: Any, result_type: type[Any] = Ack
) -> Any:
    """An Update with any payload (a dict bypasses the client-side pydantic checks, like other SDKs).

    Sent as the product's client sends it (`clients.update_retry`: transient refusals retried).
    """
    return await execute_update(handle, name, payload, result_type)


async def plain_send(handle: WorkflowHandle[Any, Any], name: str, payload: Any) -> Any:
    """An Update sent once, as a plain SDK client would."""
    return await handle.execute_update(name, payload)  # pyright: ignore[reportUnknownMemberType]


async def rejected(handle: WorkflowHandle[Any, Any], name: str, payload: Any) -> ApplicationError:
    """The named error an Update validator rejected `payload` with."""
    try:
        await send(handle, name, payload)
    except WorkflowUpdateFailedError as err:
        assert isinstance(err.cause, ApplicationError), err.cause
        return err.cause
    raise AssertionError(f"{name} was accepted")


async def session_snapshot(handle: WorkflowHandle[Any, Any], store: BlobStore) -> tuple[int, list[Any], str]:
    """What must not change when an input is refused: history length, thread, status."""
    for _ in range(300):  # after a failed workflow task, queries wait for its retry (about 10 s)
        try:
            status = await handle.query("status", result_type=SessionStatus)
            break
        except RPCError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the session did not answer queries within 30 s")
    await usage_rows_settled(handle)  # their completions are not the refused input's doing
    history = await handle.fetch_history()
    return len(history.events), await session_thread(handle, store), status.model_dump_json()


async def test_a_1_1_mb_system_prompt_is_refused_and_a_valid_large_one_works(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    await ask_sync(client, task_queue, sid, "hello", turn("hi"))
    handle = client.get_workflow_handle(sid)
    before = await session_snapshot(handle, store)
    error = await rejected(handle, "set_system_prompt", {"system_prompt": big(int(1.1 * MB), seed=3)})
    assert error.type == "payload_too_large" and str(MAX_SYSTEM_PROMPT_CHARS) in error.message
    assert await session_snapshot(handle, store) == before
    largest = big(MAX_SYSTEM_PROMPT_CHARS, seed=4)
    assert (await send(handle, "set_system_prompt", {"system_prompt": largest})).status == "accepted"
    record = await ask_sync(client, task_queue, sid, "and now?", turn("fine"))
    assert record.result == "fine"
    run = client.get_workflow_handle(record.run_workflow_id)
    assert (await run.query("context", result_type=Context)).system_prompt == largest
    assert await workflow_task_failures(handle) == [] and await workflow_task_failures(run) == []


async def test_a_1_2_mb_replace_op_then_an_ask(client: Client, task_queue: str, store: BlobStore) -> None:
    sid = new_session_id()
    await ask_sync(client, task_queue, sid, "hello", turn("hi"))
    handle = client.get_workflow_handle(sid)
    roles = ["user", "assistant"] * 6
    replacement = [{"role": r, "content": big(100 * KB, seed=30 + i)} for i, r in enumerate(roles)]
    op = {
        "op_id": "big-replace",
        "operation": {"type": "replace", "result_context": {"messages": replacement}},
    }
    assert (await send(handle, "context_modify", op)).status == "applied"
    record = await ask_sync(client, task_queue, sid, "after the replace", turn("answered"))
    assert record.status == "completed" and record.result == "answered"
    thread = await session_thread(handle, store)
    assert [e.kind for e in thread] == ["ai_message"] * 2 + ["ai_context_operation"] + ["ai_message"] * 2
    op_entry = thread[2]
    assert isinstance(op_entry, ContextOpEntry) and op_entry.payload.operation.result_context is not None
    assert [m.content for m in op_entry.payload.operation.result_context.messages] == [
        m["content"] for m in replacement
    ]
    context = await handle.query("context", result_type=Context)
    # The session keeps a window of the newest context (`window_tokens`): a suffix of the replacement.
    contents = [m.content for m in context.messages]
    assert contents[-2:] == ["after the replace", "answered"]
    kept = contents[:-2]
    assert kept and kept == [m["content"] for m in replacement][-len(kept) :]
    run = client.get_workflow_handle(record.run_workflow_id)
    assert await workflow_task_failures(handle) == [] and await workflow_task_failures(run) == []


# ---- Updates of 2-3 MB, with and without the claim check ------------------------------------------------


async def test_a_3_mb_update_to_a_run_is_refused_by_name_and_nothing_wedges(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [turn("slow answer", delay_s=20)])
    huge_steer = {"content": big(3 * MB, seed=5)}
    assert (await rejected(handle, "steer", huge_steer)).type == "payload_too_large"
    # A 2.5 MB op is under its limit (8 MiB): the claim check carries it and the run defers it.
    replacement = {"messages": [{"role": "user", "content": big(int(2.5 * MB), seed=6)}]}
    op = {"op_id": "late-op", "operation": {"type": "replace", "result_context": replacement}}
    assert (await send(handle, "context_modify", op)).status == "deferred"
    # Without the claim check (a plain client), the Update is refused by the payload limit: the
    # worker's rejection would echo 3 MB, so that one workflow task fails and the run carries on.
    raw = Client(client.service_client, namespace=client.namespace, data_converter=pydantic_data_converter)
    raw_handle = raw.get_workflow_handle(handle.id)
    refused = await server_refusal(plain_send(raw_handle, "steer", huge_steer))
    result = await handle.result()
    assert result.status == "completed" and result.result == "slow answer"
    last = result.entries[-1]
    assert isinstance(last, ContextOpEntry) and last.payload.op_id == "late-op"
    assert set(await workflow_task_failures(handle)) <= {PAYLOAD_LIMIT_FAILURE}
    print(f"\na 3 MB steer without the claim check was refused: {refused}")


async def test_a_3_mb_update_to_an_idle_session_is_refused_by_name_and_nothing_wedges(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    await ask_sync(client, task_queue, sid, "hello", turn("hi"))
    handle = client.get_workflow_handle(sid)
    before = await session_snapshot(handle, store)
    huge_ask = {"query": big(3 * MB, seed=7)}
    assert (await rejected(handle, "ask", huge_ask)).type == "payload_too_large"
    assert (await rejected(handle, "steer", {"content": big(3 * MB, seed=7)})).type == "payload_too_large"
    raw = Client(client.service_client, namespace=client.namespace, data_converter=pydantic_data_converter)
    await server_refusal(plain_send(raw.get_workflow_handle(sid), "ask", huge_ask))
    assert (await session_snapshot(handle, store))[1:] == before[1:], "thread and status unchanged"
    record = await ask_sync(client, task_queue, sid, "still there?", turn("yes"))
    assert record.result == "yes"
    assert set(await workflow_task_failures(handle)) <= {PAYLOAD_LIMIT_FAILURE}


PAYLOAD_LIMIT_FAILURE = (
    "WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE: "
    "[TMPRL1103] Attempted to upload payloads with size that exceeded the error limit."
)
"""The one failed task a plain client's oversized Update may cost (the workflow carries on)."""


async def server_refusal(update: Any) -> str:
    """The error the server answers an oversized request with (the request must fail).

    Usually `RESOURCE_EXHAUSTED` (the in-flight Update bound), which the SDK's client retries a few
    times; on a loaded machine the server sometimes closes the connection on those 3 MB attempts
    instead, and the client gives up with `RPCTimeoutOrCancelledError`. Either way the request
    failed; the callers then check that nothing changed and nothing wedged.
    """
    try:
        await update
    except (RPCError, WorkflowUpdateFailedError, RPCTimeoutOrCancelledError) as err:
        return f"{type(err).__name__}: {err}"
    raise AssertionError("the server accepted a 3 MB payload")
