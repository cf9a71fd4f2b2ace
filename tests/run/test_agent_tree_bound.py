"""`max_agent_runs` bounds the agent runs of a whole tree, not only its depth (issue 23).

One start request could create an exponential tree of agent runs (k calls per level, d
levels: k + k^2 + ... runs). Here the top-level run calls `mid` three times in one round and
each `mid` calls `leaf` three times: twelve agent runs unbounded; with `max_agent_runs=6`
the tree starts at most six, the refused calls get `agent_runs_exceeded` results, and the
top-level usage counts the agent runs that did start.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio.client import Client

from clients.runs import Runs
from contracts import RunResult, Trace
from conversation import MessageEntry
from testing import answer, call_tools, scripted_agent, tool_call


def fan_out(agent: str, times: int, then: str, **config: Any) -> dict[str, Any]:
    """A config calling `agent` `times` times in one round, then answering `then`."""
    calls = [tool_call(agent, {"query": f"part {k}"}, call_id=f"{agent}-{k}") for k in range(times)]
    return scripted_agent(call_tools(*calls), answer(then), **config).model_dump(mode="json")


async def agent_runs_below(client: Client, workflow_id: str) -> list[str]:
    """Every agent run under `workflow_id`, from the `agent_started` events of each run's trace."""
    trace = await client.get_workflow_handle(workflow_id).query("trace", result_type=Trace)
    children = [str(e.data["workflow_id"]) for e in trace.events if e.kind == "agent_started"]
    found = list(children)
    for child in children:
        found += await agent_runs_below(client, child)
    return found


def tool_errors(result: RunResult) -> list[str]:
    errors: list[str] = []
    for entry in result.entries:
        if isinstance(entry, MessageEntry) and entry.payload.role == "tool":
            outcome = json.loads(entry.payload.content)
            if not outcome["ok"]:
                errors.append(outcome["error"]["type"])
    return errors


async def test_a_tree_of_agents_starts_at_most_max_agent_runs(client: Client, task_queue: str) -> None:
    leaf = scripted_agent(answer("leaf answer")).model_dump(mode="json")
    mid = fan_out("leaf", 3, "mid answer", agents=[{"name": "leaf", "config": leaf}])
    top = scripted_agent(
        *[
            call_tools(*[tool_call("mid", {"query": f"part {k}"}, call_id=f"mid-{k}") for k in range(3)]),
            answer("top answer"),
        ],
        agents=[{"name": "mid", "config": mid}],
        max_agent_runs=6,
    )
    handle = await Runs(client, task_queue=task_queue).start("fan out", top)
    result = await handle.result()
    assert result.status == "completed" and result.result == "top answer"
    started = await agent_runs_below(client, handle.workflow_id)
    assert 0 < len(started) <= 6, started
    assert len(set(started)) == len(started)
    assert result.outcome.usage.agent_runs == len(started)
    # Every call that did not get a run was refused by name, at the top or in a `mid`.
    refused = tool_errors(result)
    for mid_id in [run for run in started if run.count("/agent-") == 1]:
        refused += tool_errors(await client.get_workflow_handle(mid_id, result_type=RunResult).result())
    assert set(refused) == {"agent_runs_exceeded"}
    assert len(refused) + len(started) == 12


async def test_sequential_agent_calls_reuse_what_ended_children_did_not_use(
    client: Client, task_queue: str
) -> None:
    leaf = scripted_agent(answer("leaf answer")).model_dump(mode="json")
    rounds = [call_tools(tool_call("leaf", {"query": f"q{k}"}, call_id=f"leaf-{k}")) for k in range(4)]
    top = scripted_agent(*rounds, answer("done"), agents=[{"name": "leaf", "config": leaf}], max_agent_runs=4)
    result = await Runs(client, task_queue=task_queue).run("one at a time", top)
    assert result.status == "completed" and tool_errors(result) == []
    assert result.outcome.usage.agent_runs == 4
