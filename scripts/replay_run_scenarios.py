"""The replay scenarios of single runs: tool rounds, steering, cancels, failures, streams, approvals, agents.

Registered with `scripts._replay_registry.scenario`; see there.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from scripts._replay_lab import Lab
from scripts._replay_registry import calc, expect, scenario, slow


@scenario("activity:llm_call", "activity:run_tool", "marker:core_patch", "completed")
async def tool_round(lab: Lab) -> list[str]:
    """Two tool rounds (one with two parallel calls), then a final answer."""
    script = [
        {"tool_calls": [calc("17 * 23", "c1"), calc("2 + 2", "c2")]},
        {"tool_calls": [calc("391 + 4", "c3")]},
        {"content": "It is 395."},
    ]
    handle = await lab.start_run("tool-round", "What is 17 * 23 + 2 + 2?", script)
    await handle.result()
    return [handle.id]


@scenario("update:steer", "signal:inject", "update:context_modify")
async def steering_and_op(lab: Lab) -> list[str]:
    """A steer and an inject while a tool runs, and a context op deferred to the run's end."""
    handle = await lab.start_run(
        "steering", "Take your time.", [slow(1.5, "s1"), {"content": "Done, in French."}]
    )
    await lab.until_tool_runs(handle.id)
    expect(await handle.execute_update("steer", {"content": "Answer in French."}), "status", "queued")
    await handle.signal("inject", {"content": "FYI: the user is on mobile.", "source": "app"})
    messages = [{"role": "user", "content": "s"}]
    op = {"op_id": "op-1", "operation": {"type": "replace", "result_context": {"messages": messages}}}
    expect(await handle.execute_update("context_modify", op), "status", "deferred")
    await handle.result()
    return [handle.id]


@scenario("update:cancel", "activity_cancel_requested")
async def cancelled(lab: Lab) -> list[str]:
    """A cancel while a tool runs."""
    handle = await lab.start_run("cancelled", "Wait.", [slow(3, "s1")])
    await lab.until_tool_runs(handle.id)
    expect(await handle.execute_update("cancel", {"reason": "user pressed stop"}), "status", "accepted")
    await handle.result()
    return [handle.id]


@scenario("activity_retried")
async def retried_and_limited(lab: Lab) -> list[str]:
    """An LLM call retried after a rate limit, then max_iterations reached."""
    script = [
        {"tool_calls": [calc("1 + 1", "c1")], "error": "rate_limit"},
        {"tool_calls": [calc("2 + 2", "c2")]},
    ]
    handle = await lab.start_run("limited", "Loop.", script, max_iterations=2)
    await handle.result()
    return [handle.id]


@scenario("failed", "activity_failed:authentication")
async def failed_and_invalid(lab: Lab) -> list[str]:
    """A run that fails (the provider refuses the key) and one whose input is invalid."""
    from temporalio.client import WorkflowFailureError

    failed = await lab.start_run("failed", "Fail.", [{"content": "never", "error": "auth"}])
    expect((await failed.result())["outcome"], "status", "failed")
    invalid = await lab.start_run("invalid", "Invalid.", [], tools=["no_such_tool"])
    with contextlib.suppress(WorkflowFailureError):
        await invalid.result()
        raise RuntimeError("a run with an unknown tool completed")
    return [failed.id, invalid.id]


@scenario("marker:core_local_activity", "activity:count_tokens")
async def local_and_exact(lab: Lab) -> list[str]:
    """A local tool next to a regular one in one round; exact token counts (`count_tokens`)."""
    script = [
        {"tool_calls": [{"name": "shout", "arguments": {"text": "hi"}, "id": "l1"}, calc("6 * 7", "c1")]},
        {"content": "HI, and 42."},
    ]
    policy = {"token_estimator": "exact"}
    handle = await lab.start_run(
        "local-exact", "Shout and count.", script, tools=["calculator", "shout"], context_policy=policy
    )
    await handle.result()
    return [handle.id]


async def _until_streamed(lab: Lab, workflow_id: str) -> None:
    """Wait until the run's history holds a batch of deltas (a publish signal)."""
    handle = lab.client.get_workflow_handle(workflow_id)
    for _ in range(200):
        async for event in handle.fetch_history_events():
            attrs = event.workflow_execution_signaled_event_attributes
            if attrs.signal_name == "__temporal_workflow_stream_publish":
                return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{workflow_id} streamed nothing within 10 s")


@scenario(
    "signal:__temporal_workflow_stream_publish",
    "update:__temporal_workflow_stream_poll",
    "activity_cancel_requested",
)
async def live(lab: Lab) -> list[str]:
    """A streamed answer cut short by an interrupting steer (with a subscriber); a tool round interrupted."""
    from temporalio.contrib.workflow_streams import WorkflowStreamClient

    long = {"content": "once upon a time " * 40, "chunk_chars": 8, "chunk_delay_s": 0.05}
    handle = await lab.start_run("live", "Tell a story.", [long, {"content": "Short."}], stream=True)
    stream = WorkflowStreamClient.create(lab.client, handle.id)
    follower = asyncio.create_task(_drain(stream.subscribe("events")))
    await _until_streamed(lab, handle.id)
    interrupt = {"content": "Shorter.", "mode": "interrupt"}
    expect(await handle.execute_update("steer", interrupt), "mode", "interrupt")
    await handle.result()
    await follower
    tools = await lab.start_run(
        "live-tools", "Run both.", [slow(3, "s1"), {"content": "Stopped."}], tool_concurrency=1
    )
    await lab.until_tool_runs(tools.id)
    interrupt = {"content": "Stop.", "mode": "interrupt", "cancel_tools": True}
    expect(await tools.execute_update("steer", interrupt), "mode", "interrupt")
    await tools.result()
    return [handle.id, tools.id]


@scenario("marker:core_local_activity", "activity_cancel_requested")
async def live_channel(lab: Lab) -> list[str]:
    """A streamed answer on a live-channel worker cut by an interrupting steer (its text read there)."""
    long = {"content": "once upon a time " * 40, "chunk_chars": 8, "chunk_delay_s": 0.05}
    async with lab.live_channel():
        script = [long, {"content": "Short."}]
        handle = await lab.start_run("live-channel", "Tell a story.", script, stream=True)
        await _until_trace(lab, handle.id, "llm_started")
        await asyncio.sleep(1.5)  # some of the story is in the channel (none of it reaches the run)
        interrupt = {"content": "Shorter.", "mode": "interrupt"}
        expect(await handle.execute_update("steer", interrupt), "mode", "interrupt")
        result = await handle.result()
    interrupted = [e for e in result["entries"] if e.get("refs", {}).get("interrupted") == "true"]
    if len(interrupted) != 1:
        raise RuntimeError(f"expected one interrupted entry read from the channel, got {interrupted!r}")
    return [handle.id]


async def _drain(items: Any) -> None:
    async for _ in items:
        pass


async def _until_trace(lab: Lab, workflow_id: str, kind: str) -> list[dict[str, Any]]:
    """Wait until the run's trace has events of `kind`; return them."""
    handle = lab.client.get_workflow_handle(workflow_id)
    for _ in range(200):
        events = [e for e in (await handle.query("trace"))["events"] if e["kind"] == kind]
        if events:
            return events
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{workflow_id} recorded no {kind} within 10 s")


@scenario("update:approve", "signal:approve", "activity:check_tool_arguments")
async def approvals(lab: Lab) -> list[str]:
    """Three calls that need approval: approved with edited arguments, denied by signal, timed out."""
    script = [
        {"tool_calls": [calc("1 + 1", "a1"), calc("2 + 2", "a2"), calc("3 + 3", "a3")]},
        {"content": "Two of three were not run."},
    ]
    handle = await lab.start_run(
        "approvals", "Add these.", script, approval_required=["calculator"], approval_timeout_s=3
    )
    await _until_trace(lab, handle.id, "approval_requested")
    edit = {"call_id": "a1", "arguments": {"expression": "10 + 10"}, "approver": "alice"}
    expect(await handle.execute_update("approve", edit), "status", "accepted")
    await handle.signal("approve", {"call_id": "a2", "approved": False, "reason": "no", "approver": "bob"})
    await handle.result()
    return [handle.id]


@scenario("child", "activity:resolve_agents")
async def agents(lab: Lab) -> list[str]:
    """A run that calls a worker's agent profile and an inline agent as tools (child runs)."""
    inline = {"name": "helper", "config": {"model": "scripted", "script": [{"content": "Helped."}]}}
    script = [
        {"tool_calls": [{"name": "researcher", "arguments": {"query": "find it"}, "id": "r1"}]},
        {"tool_calls": [{"name": "helper", "arguments": {"query": "help"}, "id": "h1"}]},
        {"content": "Both agents answered."},
    ]
    handle = await lab.start_run("agents", "Ask the agents.", script, agents=[{"name": "researcher"}, inline])
    await handle.result()
    return [handle.id, f"{handle.id}/agent-1", f"{handle.id}/agent-2"]


@scenario("activity_failed:context_window_exceeded")
async def overflow(lab: Lab) -> list[str]:
    """A context-window overflow recovered with a smaller view."""
    context = {"messages": [{"role": "user", "content": "old " * 200} for _ in range(12)]}
    script = [{"error": "context_window"}, {"content": "Yes."}]
    handle = await lab.start_run("overflow", "Still there?", script, context=context)
    await handle.result()
    return [handle.id]


@scenario("activity:check_output_schema")
async def structured(lab: Lab) -> list[str]:
    """Structured output: an answer that does not match the schema, one repair, then a valid one."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    script = [{"content": "forty-two"}, {"content": '```json\n{"n": 42}\n```'}]
    handle = await lab.start_run("structured", "Give n.", script, output={"json_schema": schema})
    result = await handle.result()
    if result.get("output") != {"n": 42}:
        raise RuntimeError(f"expected the parsed output, got {result!r}")
    return [handle.id]


@scenario("marker:core_local_activity")
async def transformed(lab: Lab) -> list[str]:
    """A request transformer (a local activity before every LLM call) changing later calls."""
    script = [{"tool_calls": [calc("6 * 7", "t1")]}, {"content": "42."}]
    handle = await lab.start_run("transformed", "Compute.", script, request_transformer="cool_down")
    await handle.result()
    return [handle.id]


@scenario("activity:run_tool")
async def effects_and_limits(lab: Lab) -> list[str]:
    """Tool state effects (one allowed, one forbidden), and a run ended by its usage limit."""
    effects = [
        {"name": "change_state", "arguments": {"op": "set", "path": "cart.n", "value_json": "1"}, "id": "e1"},
        {"name": "change_state", "arguments": {"op": "set", "path": "secret", "value_json": "1"}, "id": "e2"},
    ]
    stateful = await lab.start_run(
        "effects",
        "Fill the cart.",
        [{"tool_calls": effects}, {"content": "Done."}],
        tools=["change_state"],
        effect_policy=["cart"],
    )
    await stateful.result()
    limits = {"per_request": {"max_llm_calls": 1}}
    limited = await lab.start_run(
        "limited",
        "Too many calls.",
        [{"tool_calls": [calc("1 + 1", "l1")]}, {"content": "never"}],
        usage_limits=limits,
    )
    expect((await limited.result())["outcome"]["error"], "type", "usage_limit_exceeded")
    return [stateful.id, limited.id]
