"""Context policy and compaction end to end: bounded LLM inputs, deferred and automatic compaction."""

from __future__ import annotations

import itertools
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from clients import sessions
from contracts import Ack, Trace
from contracts.activities import RECORD_USAGE_ACTIVITY
from contracts.compaction import CompactInput
from contracts.session import AskInput, RequestRecord
from conversation import Context, ContextOpEntry
from conversation.policy import ContextPolicy
from payloads.blob_store import BlobStore
from tests.helpers import llm_inputs, turn, wait_until
from tests.session_helpers import config, new_session_id, script, session_thread

TIGHT = ContextPolicy(max_input_tokens=700, reserve_output_tokens=200, keep_last_turns=2)
FILLER = "lorem ipsum dolor sit amet " * 8  # ~216 bytes, ~64 tokens per message


async def ask_sync(
    client: Client, task_queue: str, sid: str, query: str, *turns: Any, policy: ContextPolicy | None = None
) -> RequestRecord:
    accepted = await sessions.ask(
        client,
        sid,
        AskInput(query=query, overrides=script(*turns)),
        agent_id="policy-test",
        config=config(system_prompt="Be brief.", context_policy=policy),
        task_queue=task_queue,
    )
    return await sessions.await_result(client, sid, accepted.request_id)


_WORKFLOW_TASK_EVENTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
}


def events_per_turn(history_events: list[Any]) -> list[int]:
    """Events between consecutive `ask` child starts in one run of the session.

    Left out: workflow task events (how the server batches a turn into tasks varies) and the
    usage rows' activities (written aside, each lands in whichever turn it finishes in).
    """
    usage_scheduled = {
        e.event_id
        for e in history_events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == RECORD_USAGE_ACTIVITY
    }

    def usage_event(e: Any) -> bool:
        return e.event_id in usage_scheduled or any(
            e.HasField(name) and getattr(e, name).scheduled_event_id in usage_scheduled
            for name in (
                "activity_task_started_event_attributes",
                "activity_task_completed_event_attributes",
                "activity_task_failed_event_attributes",
                "activity_task_timed_out_event_attributes",
            )
        )

    counted = [e for e in history_events if e.event_type not in _WORKFLOW_TASK_EVENTS and not usage_event(e)]
    starts = [
        i
        for i, e in enumerate(counted)
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    return [b - a for a, b in itertools.pairwise(starts)]


async def session_runs(client: Client, sid: str) -> list[list[Any]]:
    """The event lists of every run of the session, oldest first (it continues as new)."""
    runs: list[list[Any]] = []
    handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(sid)
    while True:
        history = await handle.fetch_history()
        runs.insert(0, list(history.events))
        previous = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            return runs
        handle = client.get_workflow_handle(sid, run_id=previous)


async def test_long_conversation_stays_within_budget(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    sid = new_session_id()
    turns = 200
    budget = TIGHT.max_input_tokens - TIGHT.reserve_output_tokens
    records = [
        await ask_sync(client, task_queue, sid, f"q{i} {FILLER}", turn(f"a{i} {FILLER}"), policy=TIGHT)
        for i in range(turns)
    ]
    assert all(r.status == "completed" for r in records)
    handle = client.get_workflow_handle(sid)
    # The whole conversation is still in the thread...
    assert len(await session_thread(handle, store)) == 2 * turns
    # ...but every LLM call saw a budgeted projection (each run keeps its trace).
    for record in records[-20:]:
        trace = await client.get_workflow_handle(record.run_workflow_id).query("trace", result_type=Trace)
        (started,) = [e for e in trace.events if e.kind == "llm_started"]
        assert started.data["estimated_tokens"] <= budget and started.data["truncated"] is True
    sizes: list[int] = []
    for index, record in list(enumerate(records))[::40]:
        (seen,) = await llm_inputs(client.get_workflow_handle(record.run_workflow_id))
        sizes.append(len(str(seen["messages"])))
        assert seen["messages"][-1]["content"] == f"q{index} {FILLER}"
    assert max(sizes[1:]) <= 2 * min(sizes[1:]), sizes  # bounded, not growing with the conversation
    # The session's history events per turn stay constant across continue-as-new runs,
    # and so does what each turn's child run is started with (the lane trimmed to the view).
    runs = await session_runs(client, sid)
    start_sizes = [
        len(e.start_child_workflow_execution_initiated_event_attributes.input.payloads[0].data)
        for run in runs
        for e in run
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    assert len(start_sizes) == turns
    assert max(start_sizes[-50:]) <= 1.5 * max(start_sizes[10:30]), start_sizes
    per_turn = [n for run in runs for n in events_per_turn(run)]
    assert len(per_turn) > turns / 2
    # The same events each turn (8 here), and 4 more on a turn that compacts.
    assert max(per_turn) - min(per_turn) <= 4, per_turn
    assert sum(per_turn[-20:]) <= sum(per_turn[:20]) + 20


async def test_compaction_during_a_run_is_deferred_then_applied(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    for i in range(4):
        await ask_sync(client, task_queue, sid, f"fact {i}: {FILLER}", turn(f"noted {i}"), policy=TIGHT)
    accepted = await sessions.ask(
        client,
        sid,
        AskInput(query="slow one", overrides=script(turn("slow answer", delay_s=1.5))),
        agent_id="policy-test",
        config=config(),
        task_queue=task_queue,
    )
    run = client.get_workflow_handle(accepted.run_workflow_id)
    await wait_until(run, lambda _s, t: any(e.kind == "llm_started" for e in t.events))
    handle = client.get_workflow_handle(sid)
    ack: Ack = await sessions.update(handle, "compact", CompactInput(op_id="compact-1"), Ack)
    assert ack.status == "deferred"
    await sessions.await_result(client, sid, accepted.request_id)
    thread = await session_thread(handle)
    op_entry = thread[-1]
    assert isinstance(op_entry, ContextOpEntry) and op_entry.payload.op_id == "compact-1"
    operation = op_entry.payload.operation
    assert operation.reason == "compaction" and operation.result_context is not None
    assert operation.result_context.summary and "fact 0" in operation.result_context.summary
    assert operation.meta["tokens_after"] < operation.meta["tokens_before"]  # type: ignore[operator]
    # The deferred compaction kept what the run said after it was computed.
    assert [m.content for m in operation.result_context.messages][-2:] == ["slow one", "slow answer"]
    context = await handle.query("context", result_type=Context)
    assert context == operation.result_context
    # The next call sees the summary (in the system prompt by default) and the kept turns.
    record = await ask_sync(client, task_queue, sid, "what facts?", turn("0 to 3"), policy=TIGHT)
    (seen,) = await llm_inputs(client.get_workflow_handle(record.run_workflow_id))
    assert (
        "Summary of the earlier conversation" in seen["system_prompt"] and "fact 0" in seen["system_prompt"]
    )


async def test_request_new_compacts_by_itself_before_the_run(client: Client, task_queue: str) -> None:
    sid = new_session_id()
    policy = TIGHT.model_copy(update={"summarization": "request_new"})
    for i in range(8):
        await ask_sync(client, task_queue, sid, f"fact {i}: {FILLER}", turn(f"noted {i}"), policy=policy)
    thread = await session_thread(client.get_workflow_handle(sid))
    compactions = [
        e for e in thread if isinstance(e, ContextOpEntry) and e.payload.operation.reason == "compaction"
    ]
    assert compactions and all(e.payload.op_id.startswith("auto-compact-") for e in compactions)
    # The auto-compaction happened before a run started: a user query follows it directly.
    first = compactions[0]
    following = thread[first.seq + 1]
    assert following.kind == "ai_message" and following.payload.role == "user"
