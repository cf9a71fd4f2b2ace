"""Context operations on a ReActRun: deferral, latest-wins, dedupe, lanes and projection."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowHandle

from contracts import Ack, RunResult
from conversation import Context, ContextModifyInput, ContextOpEntry, Message, MessageEntry, project
from tests.helpers import (
    context_of,
    start_run,
    started_llm_calls,
    thread_of,
    trace_of,
    turn,
    update,
    wait_until,
)


def replace_op(
    op_id: str, text: str, context_ref: str | None = None, prompt: str | None = None
) -> ContextModifyInput:
    return ContextModifyInput.model_validate(
        {
            "op_id": op_id,
            "context_ref": context_ref,
            "operation": {
                "type": "replace",
                "reason": "manual",
                "result_context": {"system_prompt": prompt, "messages": [{"role": "user", "content": text}]},
            },
        }
    )


async def modify(handle: WorkflowHandle[Any, RunResult], op: ContextModifyInput) -> Ack:
    return await update(handle, "context_modify", op)


async def slow_run(client: Client, task_queue: str, **kwargs: Any) -> WorkflowHandle[Any, RunResult]:
    handle = await start_run(client, task_queue, [turn("answer", delay_s=1.5)], **kwargs)
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    return handle


async def test_two_ops_during_a_run_only_the_latest_is_applied_after_the_messages(
    client: Client, task_queue: str
) -> None:
    handle = await slow_run(client, task_queue)
    first = await modify(handle, replace_op("op-1", "summary one"))
    second = await modify(handle, replace_op("op-2", "summary two", prompt="New prompt"))
    assert (first.status, second.status) == ("deferred", "deferred")
    result = await handle.result()
    assert [type(e).__name__ for e in result.entries] == ["MessageEntry", "MessageEntry", "ContextOpEntry"]
    op_entry = result.entries[-1]
    assert isinstance(op_entry, ContextOpEntry) and op_entry.payload.op_id == "op-2"
    assert all(
        not (isinstance(e, ContextOpEntry) and e.payload.op_id == "op-1") for e in await thread_of(handle)
    )
    assert (await context_of(handle)) == Context(
        system_prompt="New prompt", messages=[Message(role="user", content="summary two")]
    )
    kinds = [e.kind for e in (await trace_of(handle)).events]
    assert kinds.count("context_op_deferred") == 2 and kinds.count("context_op_applied") == 1
    assert kinds.index("request_completed") < kinds.index("context_op_applied")


async def test_same_op_id_twice_is_applied_once(client: Client, task_queue: str) -> None:
    handle = await slow_run(client, task_queue)
    await modify(handle, replace_op("dup", "once"))
    await handle.signal("context_modify", replace_op("dup", "once"))
    result = await handle.result()
    assert sum(isinstance(e, ContextOpEntry) for e in result.entries) == 1


async def test_invalid_op_is_rejected_with_a_reason_and_changes_nothing(
    client: Client, task_queue: str
) -> None:
    handle = await slow_run(client, task_queue)
    assert (await modify(handle, replace_op("keep", "kept"))).status == "deferred"
    bad = ContextModifyInput.model_validate({"op_id": "bad", "operation": {"type": "rewrite"}})
    ack = await modify(handle, bad)
    assert (
        ack.status == "rejected" and ack.reason == "invalid_op" and ack.message and "rewrite" in ack.message
    )
    no_context = await modify(
        handle, ContextModifyInput.model_validate({"op_id": "x", "operation": {"type": "replace"}})
    )
    assert no_context.status == "rejected" and no_context.message and "result_context" in no_context.message
    result = await handle.result()
    op_entries = [e for e in result.entries if isinstance(e, ContextOpEntry)]
    assert [e.payload.op_id for e in op_entries] == ["keep"]
    rejected = [e for e in (await trace_of(handle)).events if e.kind == "context_op_rejected"]
    assert len(rejected) == 2


async def test_replace_into_a_lane_then_switch_to_a_fresh_lane(client: Client, task_queue: str) -> None:
    handle = await slow_run(client, task_queue, system_prompt="Base prompt")
    await modify(handle, replace_op("to-alt", "alt history", context_ref="alt"))
    first = await handle.result()
    assert first.context_ref == "alt"
    first_context = await context_of(handle)
    assert [m.content for m in first_context.messages] == ["alt history"]
    assert first_context.system_prompt == "Base prompt"

    # Continue the alt lane in a second run, then switch to a lane with no history.
    handle = await start_run(
        client,
        task_queue,
        [turn("second", delay_s=1.5)],
        context=first_context,
        context_ref="alt",
        system_prompt="Base prompt",
    )
    await wait_until(handle, lambda _s, t: started_llm_calls(t) == 1)
    switch = ContextModifyInput.model_validate(
        {"op_id": "to-fresh", "context_ref": "fresh", "operation": {"type": "switch"}}
    )
    assert (await modify(handle, switch)).status == "deferred"
    second = await handle.result()
    assert second.context_ref == "fresh"
    assert (await context_of(handle)) == Context(system_prompt="Base prompt", messages=[])
    # The second run's messages went to the alt lane and stay there.
    thread = await thread_of(handle)
    alt = project(thread, "alt", base_system_prompt="Base prompt")
    assert [m.content for m in alt.messages] == ["alt history", "What is 6 * 7?", "second"]


async def test_projection_at_a_seq_boundary(client: Client, task_queue: str) -> None:
    handle = await slow_run(client, task_queue)
    await modify(handle, replace_op("compact", "compacted"))
    await handle.result()
    thread = await thread_of(handle)
    answer_seq = next(e.seq for e in thread if isinstance(e, MessageEntry) and e.payload.role == "assistant")
    before_op = project(thread, "default", at_seq=answer_seq)
    assert [m.content for m in before_op.messages] == ["What is 6 * 7?", "answer"]
    assert project(thread, "default", at_seq=0).messages == [Message(role="user", content="What is 6 * 7?")]
    assert project(thread, "default") == (await context_of(handle))
