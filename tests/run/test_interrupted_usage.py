"""A call cut short by an interrupting steer counts its estimated usage (issue 23).

A cancelled stream reports no usage; before, such calls counted toward no cap, so a client
could cut calls to spend past `usage_limits`. Now each counts as an LLM call, its input at
the view's estimate and its output at what it had streamed.
"""

from __future__ import annotations

from temporalio.client import Client

from tests.helpers import start_run, started_llm_calls, turn, wait_until
from tests.run.test_steer_interrupt import LONG, steer


async def test_an_interrupted_call_counts_as_a_call_with_estimated_tokens(
    client: Client, task_queue: str
) -> None:
    script = [turn(LONG, chunk_chars=5, chunk_delay_s=0.1), turn("final")]
    handle = await start_run(client, task_queue, script, stream=True, stream_interval_s=0.05)
    await wait_until(handle, lambda _s, t: any(e.kind == "llm_started" for e in t.events))
    ack = await steer(handle, "Shorter, please.", mode="interrupt")
    assert ack.mode == "interrupt"
    result = await handle.result()
    assert result.status == "completed" and result.answer == "final"
    usage = result.outcome.usage
    assert usage.llm_calls == 2
    # The final call's own prompt is smaller than both calls' together: the cut call's input counts.
    assert usage.prompt_tokens > 0 and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_interrupting_calls_cannot_spend_past_max_llm_calls(client: Client, task_queue: str) -> None:
    slow = turn("never finished", delay_s=30)
    handle = await start_run(
        client,
        task_queue,
        [slow, slow, turn("third call")],
        usage_limits={"per_request": {"max_llm_calls": 2}},
    )
    for calls in (1, 2):
        await wait_until(handle, lambda _s, t, calls=calls: started_llm_calls(t) == calls)
        assert (await steer(handle, f"interrupt {calls}", mode="interrupt")).mode == "interrupt"
    result = await handle.result()
    assert result.status == "failed" and result.outcome.error is not None
    assert result.outcome.error.type == "usage_limit_exceeded"
    assert "max_llm_calls is 2" in result.outcome.error.message
    assert result.outcome.usage.llm_calls == 2
