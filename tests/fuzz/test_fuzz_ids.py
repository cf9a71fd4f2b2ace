"""Fuzzing the ids clients give and the ids models give (issue 23), against a real server.

Ids come from hypothesis, drawn near every bound (empty, blank, 200 characters, Temporal's
1,000 bytes, multi-byte characters, control characters), and go through a raw Temporal client
with the SDK's default JSON converter, as from another SDK:

- as a session's workflow id: the session answers its ask, or fails at its start with
  `invalid_input` (and refuses the ask by that name), or Temporal refuses the start itself;
- as a run's workflow id, for a run that calls an agent: the run and its agent complete;
- as a fork's `session_id`: the fork starts, or is refused by name and starts nothing;
- as tool call ids a model repeats within a round, some calls needing approval: every call
  waits under an id of its own, is approved, and runs.

No case may leave a failed workflow task behind. `REACT_FUZZ_ID_EXAMPLES` (default 12) sets
the examples per class.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from contracts import RunResult
from contracts.session import AskAccepted, ForkResult, RequestResult
from contracts.workflow_ids import MAX_SESSION_ID_CHARS, MAX_WORKFLOW_ID_BYTES, workflow_id_problem
from testing import answer, call_tools, scripted_agent, tool_call
from tests.approvals.test_approval import start, waiting
from tests.helpers import workflow_task_failures
from tests.session_helpers import new_session_id, script

EXAMPLES = int(os.environ.get("REACT_FUZZ_ID_EXAMPLES", "12"))
T = TypeVar("T")

_CHARS = st.sampled_from(["a", "-", "/", "é", "漢", "🙂", " ", "\t", "\x00", "~"])
_LENGTHS = st.sampled_from([0, 11, 12, 150, 199, 200, 201, 300, 333, 900, 995, 999, 1000, 1001, 1200])


@st.composite
def id_shapes(draw: st.DrawFn) -> tuple[int, str]:
    """An id's shape near a bound: its length and the characters that fill it (blank when 0 long)."""
    length = draw(_LENGTHS)
    if length == 0:
        return 0, draw(st.sampled_from(["", " ", "  \t"]))
    return length, "".join(draw(st.lists(_CHARS, min_size=1, max_size=4)))


def make_id(shape: tuple[int, str]) -> str:
    """The id of `shape`, with a fresh head so that no two cases collide."""
    length, filler = shape
    if length == 0:
        return filler
    return (f"fz{uuid.uuid4().hex[:8]}" + filler * length)[:length]


def drawn_ids() -> list[str]:
    return [make_id(shape) for shape in draw_all(id_shapes())]


def draw_all(strategy: st.SearchStrategy[T]) -> list[T]:
    """`EXAMPLES` values of `strategy`, drawn up front (the cases run against live workflows)."""
    drawn: list[T] = []
    checks = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=checks,
    )
    @given(strategy)
    def collect(value: T) -> None:
        drawn.append(value)

    collect()
    return drawn


def raw(client: Client) -> Client:
    return Client(client.service_client, namespace=client.namespace, data_converter=DataConverter.default)


SESSION_START = {"agent_id": "fuzz", "config": {"model": "scripted"}}


async def started(client: Client, workflow: str, arg: Any, workflow_id: str, task_queue: str) -> bool:
    """Start a workflow by a raw client; False when Temporal itself refuses the id."""
    try:
        await raw(client).start_workflow(workflow, arg, id=workflow_id, task_queue=task_queue)
    except RPCError as error:  # only an id the product refuses too (Temporal's limit, blank, NUL)
        assert workflow_id_problem(workflow_id, "id", max_chars=MAX_WORKFLOW_ID_BYTES), (workflow_id, error)
        return False
    return True


async def one_session_id(client: Client, task_queue: str, session_id: str) -> None:
    if not await started(client, "AgentSession", SESSION_START, session_id, task_queue):
        return
    handle = raw(client).get_workflow_handle(session_id)
    ask = {"query": "hello", "overrides": script(answer("hi"))}
    problem = workflow_id_problem(session_id, "the session's workflow id")
    if problem is None:
        accepted = await handle.execute_update("ask", ask, result_type=AskAccepted)  # pyright: ignore[reportUnknownMemberType]
        result = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
            "await_result", {"request_id": accepted.request_id}, result_type=RequestResult
        )
        assert result.status == "completed" and result.result == "hi", session_id
    else:
        try:
            await handle.execute_update("ask", ask)  # pyright: ignore[reportUnknownMemberType]
        except WorkflowUpdateFailedError as refused:
            assert isinstance(refused.cause, ApplicationError) and refused.cause.type == "invalid_input"
        except RPCError as closed:  # the session failed before the ask reached it (or while it did)
            assert "closing workflow" in str(closed) or "already completed" in str(closed), closed
        try:
            await handle.result()
        except WorkflowFailureError as failed:
            assert isinstance(failed.cause, ApplicationError) and failed.cause.type == "invalid_input"
        else:
            raise AssertionError(f"the session {session_id!r} did not fail at its start")
    assert await workflow_task_failures(handle) == [], session_id


async def test_any_session_id_answers_or_is_refused_by_name(client: Client, task_queue: str) -> None:
    for session_id in drawn_ids():
        await one_session_id(client, task_queue, session_id)


async def test_any_run_id_can_call_an_agent(client: Client, task_queue: str) -> None:
    helper = scripted_agent(answer("helped")).model_dump(mode="json")
    agent = scripted_agent(
        call_tools(tool_call("helper", {"query": "help"}, call_id="h")),
        answer("done"),
        agents=[{"name": "helper", "config": helper}],
    )
    run = {"query": "go", "config": agent.model_dump(mode="json")}
    for run_id in drawn_ids():
        if not await started(client, "ReActRun", run, run_id, task_queue):
            continue
        handle = client.get_workflow_handle(run_id, result_type=RunResult)
        result = await handle.result()
        assert result.status == "completed" and result.result == "done", run_id
        assert await workflow_task_failures(handle) == [], run_id


async def test_any_fork_session_id_forks_or_is_refused_by_name(client: Client, task_queue: str) -> None:
    session_id = new_session_id()
    await one_session_id(client, task_queue, session_id)
    handle = raw(client).get_workflow_handle(session_id)
    for fork_id in drawn_ids():
        try:
            forked = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                "fork", {"session_id": fork_id}, result_type=ForkResult
            )
        except WorkflowUpdateFailedError as refused:
            assert isinstance(refused.cause, ApplicationError), fork_id
            assert refused.cause.type in ("invalid_input", "payload_too_large"), (fork_id, refused.cause)
            assert workflow_id_problem(fork_id, "session_id") is not None or "already runs" in str(
                refused.cause
            )
            continue
        assert forked.session_id == fork_id and len(fork_id) <= MAX_SESSION_ID_CHARS
    assert await workflow_task_failures(handle) == []


@st.composite
def repeated_calls(draw: st.DrawFn) -> list[tuple[str, str]]:
    """Tool calls (tool, id) of one round whose ids repeat: drawn from three, some empty."""
    tools = st.sampled_from(["calculator", "echo"])
    return draw(st.lists(st.tuples(tools, st.sampled_from(["a", "a", "b", ""])), min_size=2, max_size=5))


async def test_repeated_call_ids_in_a_round_each_wait_and_run(client: Client, task_queue: str) -> None:
    for calls in draw_all(repeated_calls()):
        arguments = {"calculator": {"expression": "1 + 1"}, "echo": {"text": "hi"}}
        round_ = call_tools(*(tool_call(name, arguments[name], call_id=cid or None) for name, cid in calls))
        run = await start(client, task_queue, round_, answer("ok"))
        needing = sum(1 for name, _ in calls if name == "calculator")
        pending = await waiting(run, count=needing)
        assert len({p.call_id for p in pending}) == needing, calls
        await asyncio.gather(*(run.approve(p.call_id) for p in pending))
        result = await run.result()
        assert result.status == "completed" and result.answer == "ok", calls
        assert await workflow_task_failures(client.get_workflow_handle(run.workflow_id)) == [], calls
