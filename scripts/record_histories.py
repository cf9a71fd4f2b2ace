"""Record workflow histories of real runs and sessions, for the replay tests.

    .venv/bin/python scripts/record_histories.py tests/histories/v2

Starts a dev server and a worker (no workflow cache), runs each scenario below and
writes its histories (every run of a session, children included) as JSON to the
folder. Re-record deliberately, only when a workflow change is meant to be
incompatible with histories of the previous version: the replay tests
(`tests/test_replay.py`) replay every folder under `tests/histories/`, so histories
of a released version must keep replaying (use `workflow.patched` for changes).

Scenarios use plain JSON payloads, not the project's models, so that the same script
records any version of the workflows.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

Scenario = Callable[[Any, str], Awaitable[list[str]]]


def _turns(*turns: dict[str, Any]) -> list[dict[str, Any]]:
    return list(turns)


def _config(script: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"model": "scripted", "script": script, "tools": ["calculator", "slow"], **fields}


def _calc(expression: str, call_id: str) -> dict[str, Any]:
    return {"name": "calculator", "arguments": {"expression": expression}, "id": call_id}


async def _start_run(client: Any, queue: str, query: str, config: dict[str, Any]) -> Any:
    return await client.start_workflow(
        "ReActRun",
        {"query": query, "config": config},
        id=f"replay-{query.split()[0].lower().strip('?.')}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
    )


async def tool_round(client: Any, queue: str) -> list[str]:
    """Two tool rounds (one with two parallel calls), then a final answer."""
    script = _turns(
        {"tool_calls": [_calc("17 * 23", "c1"), _calc("2 + 2", "c2")]},
        {"tool_calls": [_calc("391 + 4", "c3")]},
        {"content": "It is 395."},
    )
    handle = await _start_run(client, queue, "What is 17 * 23 + 2 + 2?", _config(script))
    await handle.result()
    return [handle.id]


async def steering_and_op(client: Any, queue: str) -> list[str]:
    """A steer and an inject while a tool runs, and a context op deferred to the run's end."""
    script = _turns(
        {"tool_calls": [{"name": "slow", "arguments": {"seconds": 1.5}, "id": "s1"}]},
        {"content": "Done, in French."},
    )
    handle = await _start_run(client, queue, "Take your time.", _config(script))
    await asyncio.sleep(0.5)
    await handle.execute_update("steer", {"content": "Answer in French."})
    await handle.signal("inject", {"content": "FYI: the user is on mobile.", "source": "app"})
    op = {
        "op_id": "op-1",
        "operation": {"type": "replace", "result_context": {"messages": [{"role": "user", "content": "s"}]}},
    }
    await handle.execute_update("context_modify", op)
    await handle.result()
    return [handle.id]


async def cancelled(client: Any, queue: str) -> list[str]:
    """A cancel while a tool runs."""
    script = _turns({"tool_calls": [{"name": "slow", "arguments": {"seconds": 3}, "id": "s1"}]})
    handle = await _start_run(client, queue, "Wait.", _config(script))
    await asyncio.sleep(0.7)
    await handle.execute_update("cancel", {"reason": "user pressed stop"})
    await handle.result()
    return [handle.id]


async def retried_and_limited(client: Any, queue: str) -> list[str]:
    """An LLM call retried after a rate limit, then max_iterations reached."""
    script = _turns(
        {"tool_calls": [_calc("1 + 1", "c1")], "error": "rate_limit"},
        {"tool_calls": [_calc("2 + 2", "c2")]},
    )
    handle = await _start_run(client, queue, "Loop.", _config(script, max_iterations=2))
    await handle.result()
    return [handle.id]


async def session(client: Any, queue: str) -> list[str]:
    """A session: asks with tools, a context op, compaction, and continue-as-new."""
    from temporalio.client import WithStartWorkflowOperation
    from temporalio.common import WorkflowIDConflictPolicy

    session_id = f"replay-session-{uuid.uuid4().hex[:8]}"
    start_input = {
        "agent_id": "replay",
        "config": _config([], system_prompt="You are a test agent."),
        "context_policy": {"keep_last_turns": 1},
    }
    children: list[str] = []

    async def ask(query: str, *turns: dict[str, Any]) -> None:
        start = WithStartWorkflowOperation(
            "AgentSession",
            start_input,
            id=session_id,
            task_queue=queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        accepted = await client.execute_update_with_start_workflow(
            "ask",
            {"query": query, "overrides": {"script": list(turns)}},
            start_workflow_operation=start,
        )
        children.append(accepted["run_workflow_id"])
        handle = client.get_workflow_handle(session_id)
        await handle.execute_update("await_result", {"request_id": accepted["request_id"]})

    await ask("What is 6 * 7?", {"tool_calls": [_calc("6 * 7", "c1")]}, {"content": "42."})
    handle = client.get_workflow_handle(session_id)
    await handle.execute_update("compact", {"op_id": "compact-1"})
    switch = {"op_id": "lane-b", "context_ref": "side", "operation": {"type": "switch"}}
    await handle.execute_update("context_modify", switch)
    for i in range(12):
        await ask(f"turn {i}", {"content": f"answer {i}"})
    return [session_id, *children]


SCENARIOS: dict[str, Scenario] = {
    "tool_round": tool_round,
    "steering_and_op": steering_and_op,
    "cancelled": cancelled,
    "retried_and_limited": retried_and_limited,
    "session": session,
}


async def _histories(client: Any, workflow_id: str) -> list[tuple[str, str]]:
    """(run id, history JSON) of every run of a workflow id, following continue-as-new."""
    out: list[tuple[str, str]] = []
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
        handle = client.get_workflow_handle(workflow_id, run_id=execution.run_id)
        history = await handle.fetch_history()
        out.append((execution.run_id, history.to_json()))
    return out


async def main(folder: Path) -> None:
    """Record every scenario into `folder`."""
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.testing import WorkflowEnvironment

    from runtime.dev_server import temporal_binary
    from tests.agent_tools import registry_for_tests
    from worker import build_worker

    folder.mkdir(parents=True, exist_ok=True)
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_binary(),
        dev_server_log_level="error",
        dev_server_extra_args=["--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=120"],
    ) as env:
        queue = f"record-{uuid.uuid4().hex[:8]}"
        worker = build_worker(
            env.client, task_queue=queue, registry=registry_for_tests(), max_cached_workflows=0
        )
        async with worker:
            for name, scenario in SCENARIOS.items():
                ids = await scenario(env.client, queue)
                await asyncio.sleep(1.0)  # let list_workflows (visibility) catch up
                count = 0
                for workflow_id in ids:
                    for run_id, history in await _histories(env.client, workflow_id):
                        count += 1
                        # The file name carries the workflow id: replaying needs it (a session
                        # derives its children's ids from its own).
                        path = folder / f"{workflow_id}@{run_id[-12:]}.json"
                        path.write_text(json.dumps(json.loads(history), indent=None) + "\n")
                print(f"{name}: {count} histories")


def workflow_id_of(path: Path) -> str:
    """The workflow id a recorded history belongs to (see `main`)."""
    return path.stem.rsplit("@", 1)[0]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/histories/v2")))
