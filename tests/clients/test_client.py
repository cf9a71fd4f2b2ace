"""The typed client's runs (`client.Runs`) against a real dev server and worker, and its rejections."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from client import AgentConfig, ContextOpEntry, MessageEntry, RejectedError, RunHandle, Runs
from clients.errors import workflow_rejection
from contracts.limits import MAX_QUERY_CHARS, MAX_REFS, MAX_SOURCE_CHARS
from tests.helpers import call, turn, update_names

SLOW = 1.5
REPO = Path(__file__).resolve().parents[2]


def config(*turns: Any, tools: list[str] | None = None) -> AgentConfig:
    return AgentConfig.model_validate({"model": "scripted", "script": list(turns), "tools": tools or []})


def run_id() -> str:
    return f"test-client-{uuid.uuid4().hex[:10]}"


async def until_llm_started(run: RunHandle) -> None:
    """Wait until the run's first LLM call has started (its worker has picked it up)."""
    for _ in range(200):
        try:
            if any(event.kind == "llm_started" for event in (await run.trace()).events):
                return
        except RPCError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("the run's first LLM call did not start")


async def test_a_run_is_started_steered_reshaped_and_read(client: Client, task_queue: str) -> None:
    runs = Runs(client, task_queue=task_queue)
    script = config(
        turn(tool_calls=[call("calculator", {"expression": "6 * 7"})], delay_s=SLOW),
        turn("Forty-two."),
        tools=["calculator"],
    )
    run = await runs.start("What is 6 * 7?  Please   answer.", script, workflow_id=run_id(), request_id="r-1")
    description = await client.get_workflow_handle(run.workflow_id).describe()
    assert await description.static_summary() == "scripted: What is 6 * 7? Please answer."
    details = await description.static_details() or ""
    assert "`scripted`" in details and "calculator" in details and "`r-1`" in details

    await until_llm_started(run)
    steered = await run.steer("Answer in words.", source="test", refs={"ticket": "T-1"})
    assert steered.status == "queued" and steered.input_id
    assert (await run.inject("FYI: the user is on mobile.")).status == "queued"
    switched = await run.switch_context("scratch", op_id="op-switch")
    assert (switched.status, switched.op_id) == ("deferred", "op-switch")
    assert (await run.state()).queued_inputs == 2

    result = await run.result()
    assert (result.status, result.result, result.request_id) == ("completed", "Forty-two.", "r-1")
    assert result.outcome.termination_reason == "final_answer" and result.outcome.usage.llm_calls == 2
    steer_entry = next(e for e in result.entries if e.refs.get("input_id") == steered.input_id)
    assert isinstance(steer_entry, MessageEntry) and steer_entry.payload.content == "Answer in words."
    assert steer_entry.refs["ticket"] == "T-1" and steer_entry.refs["source"] == "test"
    last = result.entries[-1]
    assert isinstance(last, ContextOpEntry) and last.payload.op_id == "op-switch"

    # The thread, page by page and all at once, is what the result carries.
    assert [e async for e in run.thread()] == result.entries
    page = await run.thread_page(0, limit=2)
    assert [e.seq for e in page.entries] == [0, 1] and page.next_seq == 2
    assert page.length == len(result.entries)
    assert [e.seq async for e in run.thread(since_seq=5, page_size=1)] == list(range(5, len(result.entries)))

    state = await run.state()
    assert state.outcome == result.outcome and state.active_context_ref == "scratch"
    assert (await run.context()).messages == []  # the new lane starts empty
    kinds = {event.kind for event in (await run.trace()).events}
    assert {"tool_started", "input_injected", "context_op_deferred", "context_op_applied"} <= kinds
    history_updates = await update_names(client.get_workflow_handle(run.workflow_id))
    assert history_updates == ["steer", "inject", "context_modify"]

    # A finished run answers its controls with a rejection, never an exception.
    late = await run.steer("too late")
    assert (late.status, late.reason) == ("rejected", "not_running")
    assert (await run.cancel("too late")).reason == "not_running"


async def test_input_over_a_limit_is_rejected_by_the_client_and_never_reaches_history(
    client: Client, task_queue: str
) -> None:
    runs = Runs(client, task_queue=task_queue)
    run = await runs.start("Wait.", config(turn("done", delay_s=SLOW)), workflow_id=run_id())
    too_long = await run.steer("x" * (MAX_QUERY_CHARS + 1))
    assert (too_long.status, too_long.reason) == ("rejected", "payload_too_large")
    assert str(MAX_QUERY_CHARS) in (too_long.message or "")
    assert (await run.inject("hi", source="s" * (MAX_SOURCE_CHARS + 1))).reason == "payload_too_large"
    refs = {f"k{i}": "v" for i in range(MAX_REFS + 1)}
    assert (await run.steer("hi", refs=refs)).reason == "payload_too_large"
    assert (await run.steer("   ")).reason == "blank_content"
    assert (await run.cancel("r" * 5_000)).reason == "payload_too_large"
    blank_lane = await run.switch_context(" ", op_id="op-blank")
    assert (blank_lane.status, blank_lane.reason, blank_lane.op_id) == ("rejected", "invalid_op", "op-blank")

    # The same payload sent past the client is refused by the Update's validator, with the
    # same code, and the client reads that refusal as the same rejected Ack.
    raw = client.get_workflow_handle(run.workflow_id)
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await raw.execute_update("steer", {"content": "x" * (MAX_QUERY_CHARS + 1)})  # pyright: ignore[reportUnknownMemberType]
    rejection = workflow_rejection(refused.value)
    assert rejection is not None and rejection.ack().reason == too_long.reason

    assert (await run.cancel("enough")).status == "accepted"
    assert (await run.result()).status == "cancelled"
    assert await update_names(raw) == ["cancel"]


async def test_a_run_that_cannot_start_is_a_named_rejection(client: Client, task_queue: str) -> None:
    runs = Runs(client, task_queue=task_queue)
    workflow_id = run_id()
    with pytest.raises(RejectedError) as too_long:
        await runs.start("q" * (MAX_QUERY_CHARS + 1), config(turn("x")), workflow_id=workflow_id)
    assert too_long.value.code == "payload_too_large"
    with pytest.raises(RejectedError, match="query must not be blank") as blank:
        await runs.start(" \n", config(turn("x")), workflow_id=workflow_id)
    assert blank.value.code == "invalid_input"
    with pytest.raises(RPCError) as missing:
        await client.get_workflow_handle(workflow_id).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND  # nothing was started

    # What only the workflow checks fails the run, and its result says why.
    duplicated = await runs.start("q", config(turn("x"), tools=["calculator", "calculator"]))
    with pytest.raises(RejectedError, match="calculator more than once") as invalid:
        await duplicated.result()
    assert invalid.value.code == "invalid_input"
    with pytest.raises(RejectedError) as bad_page:
        await runs.get("no-such-run").thread_page(0, limit=0)
    assert bad_page.value.code == "invalid_input"


async def test_run_waits_for_the_result(client: Client, task_queue: str) -> None:
    result = await Runs(client, task_queue=task_queue).run("Hi", config(turn("Hello!")))
    assert (result.status, result.result) == ("completed", "Hello!")
    assert [e.payload.role for e in result.entries if isinstance(e, MessageEntry)] == ["user", "assistant"]


def test_importing_the_client_loads_neither_the_cli_nor_litellm() -> None:
    names = "{'typer', 'rich', 'litellm', 'cli', 'workflows', 'activities'}"
    probe = f"import sys, client; print(sorted({{m.split('.')[0] for m in sys.modules}} & {names}))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert loaded.stdout.strip() == "[]"
