"""Context-window overflow is recovered in place: a smaller view, the same step, at most once per step."""

from __future__ import annotations

from pydantic import JsonValue
from temporalio.client import Client

from contracts import ScriptTurn
from contracts.errors import CONTEXT_WINDOW_EXCEEDED
from conversation import Context, Message
from tests.helpers import llm_inputs, start_run, trace_of, turn

HISTORY = Context(
    messages=[
        Message(role="user" if k % 2 == 0 else "assistant", content=f"earlier message {k}: " + "x" * 400)
        for k in range(20)
    ]
)
"""Twenty messages of about 100 tokens each: a view of about 2,000 tokens under the default policy."""


def _int(value: JsonValue) -> int:
    assert isinstance(value, int)
    return value


def _overflow() -> ScriptTurn:
    return turn(error="context_window", error_times=1)


async def test_an_overflow_shrinks_the_view_and_the_same_step_succeeds(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [_overflow(), turn("fits now")], context=HISTORY)
    result = await handle.result()
    assert result.status == "completed" and result.answer == "fits now"
    first, second = await llm_inputs(handle)
    assert len(second["messages"]) < len(first["messages"])
    assert second["messages"][-1]["content"] == "What is 6 * 7?"  # the newest turn is always sent
    (recovered,) = [e for e in (await trace_of(handle)).events if e.kind == "context_overflow_recovered"]
    assert _int(recovered.data["tokens_after"]) < _int(recovered.data["tokens_before"])
    assert recovered.data["messages_after"] == len(second["messages"])
    assert result.outcome.iterations == 1  # one step, two calls
    assert len(result.entries) == 2  # the thread lost nothing: the query and the answer were appended


async def test_a_second_overflow_in_the_same_step_fails_the_run(client: Client, task_queue: str) -> None:
    handle = await start_run(client, task_queue, [_overflow(), _overflow(), turn("never")], context=HISTORY)
    result = await handle.result()
    assert result.status == "failed"
    assert result.outcome.error is not None and result.outcome.error.type == CONTEXT_WINDOW_EXCEEDED
    assert len(await llm_inputs(handle)) == 2


async def test_an_overflow_with_nothing_to_drop_fails_without_a_second_call(
    client: Client, task_queue: str
) -> None:
    handle = await start_run(client, task_queue, [_overflow(), turn("never")])
    result = await handle.result()
    assert result.outcome.error is not None and result.outcome.error.type == CONTEXT_WINDOW_EXCEEDED
    assert len(await llm_inputs(handle)) == 1
    assert not [e for e in (await trace_of(handle)).events if e.kind == "context_overflow_recovered"]


async def test_each_step_may_recover_once(client: Client, task_queue: str) -> None:
    script = [
        _overflow(),
        turn(tool_calls=[{"name": "calculator", "arguments": {"expression": "6*7"}}]),
        _overflow(),
        turn("42"),
    ]
    handle = await start_run(client, task_queue, script, context=HISTORY, tools=["calculator"])
    result = await handle.result()
    assert result.status == "completed" and result.answer == "42"
    recovered = [e for e in (await trace_of(handle)).events if e.kind == "context_overflow_recovered"]
    assert len(recovered) == 2
    # the smaller budget held, then was halved again
    assert _int(recovered[1].data["budget"]) < _int(recovered[0].data["budget"])
