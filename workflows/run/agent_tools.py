"""Agents as tools: each call of an agent tool is a child `ReActRun` with the agent's own config.

The model sees each agent of `AgentConfig.agents` as a tool taking `{"query": "..."}`.
Calling it starts a child run (workflow id `<this run's id>/agent-<n>`, kept under Temporal's
limit by `contracts.workflow_ids.bounded_id`; a child in the
Web UI, cancelled when this run closes); its final answer is the tool result (cut at
64 KiB like any tool result; the child's full result is claim-checked like any payload),
its usage is added to this run's. Profiles named by `profile` are resolved once, at
the run's start (`resolve_agents`: an unknown one fails the run with `unknown_agent`).

Depth: a top-level run is depth 0. A run at `max_agent_depth` (the smallest bound of
itself and its callers) offers no agents, and a call of one anyway gets an
`agent_depth_exceeded` result; no child starts.

Breadth: the top-level run's `max_agent_runs` bounds the agent runs of its whole tree. Each
child holds one run for itself and a share of what is left (at most half, none when it
offers no agents) as its own `agent_runs_limit`; when it ends, what it did not use is free
again (`Usage.agent_runs` says what it used). A call past the bound gets an
`agent_runs_exceeded` result; no child starts.

An interrupting steer of this run cancels its running children (their LLM call in
flight is cut short); each such call gets an interrupted result with the child's usage.
A cancel of this run cancels them through Temporal (the awaited child is cancelled).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from pydantic import JsonValue
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, FailureError

from contracts import WORKFLOW_TYPE, AgentConfig, CancelInput, RunInput, RunResult, ToolError, ToolOutcome
from contracts.activities import RESOLVE_AGENTS
from contracts.agent import AgentTool
from contracts.agent_profiles import AgentProfile, ResolveAgentsRequest
from contracts.errors import (
    AGENT_DEPTH_EXCEEDED,
    AGENT_RUNS_EXCEEDED,
    CANCELLED,
    INVALID_ARGUMENTS,
    UNKNOWN_AGENT,
)
from contracts.limits import MAX_QUERY_CHARS
from contracts.llm import ToolSpec, Usage
from contracts.tools import cut_result
from contracts.workflow_ids import MAX_WORKFLOW_ID_BYTES, bounded_id
from conversation import ToolCall
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.run.trace_log import preview

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to ask the agent, in full."}},
    "required": ["query"],
}
OnStarted = Callable[[ToolCall, str], None]
PATCH_AGENT_RUNS_BOUND = "agent-runs-bound"
"""A call of an agent past the tree's `max_agent_runs` gets `agent_runs_exceeded` (before: it ran)."""


def query_problem(arguments: dict[str, JsonValue]) -> str | None:
    """Why `arguments` are not an agent tool's `{"query": "..."}`, or None."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return "query: an agent takes a non-blank string `query`"
    if len(query) > MAX_QUERY_CHARS:
        return f"query: at most {MAX_QUERY_CHARS} characters"
    if set(arguments) - {"query"}:
        return f"unexpected arguments {sorted(set(arguments) - {'query'})}: an agent takes only `query`"
    return None


def _failed(error_type: str, message: str, **extra: Any) -> ToolOutcome:
    return ToolOutcome(ok=False, attempts=0, error=ToolError(type=error_type, message=message), **extra)


class AgentCalls:
    """The agents a run offers as tools, and the child runs of its calls to them."""

    def __init__(self, run: RunInput) -> None:
        """The agents of `run.config`, at `run.agent_depth` under the callers' bound."""
        config = run.config
        self._tools: dict[str, AgentTool] = {tool.name: tool for tool in config.agents}
        self._profiles: dict[str, AgentProfile] = {}
        self.depth = run.agent_depth
        bound = run.agent_depth_limit
        self.limit = config.max_agent_depth if bound is None else min(bound, config.max_agent_depth)
        runs = run.agent_runs_limit
        self.runs_limit = config.max_agent_runs if runs is None else min(runs, config.max_agent_runs)
        self._spent = 0  # agent runs of the ended children, with their own agents' runs
        self._held: dict[str, int] = {}  # call id -> runs held for a running child: itself and its share
        self._started = 0
        self._running: dict[str, str] = {}  # call id -> child workflow id
        self._interrupted: set[str] = set()
        self._signals: set[asyncio.Task[None]] = set()

    def offers(self, name: str) -> bool:
        """Whether `name` is one of this run's agents."""
        return name in self._tools

    async def resolve(self) -> None:
        """Fetch the profiles the agents name from the worker (once, before the first LLM call).

        Raises:
            ApplicationError: `unknown_agent` (non-retryable), naming what the worker lacks.
        """
        names = sorted({tool.profile or tool.name for tool in self._tools.values() if tool.config is None})
        if not names:
            return
        try:
            profiles = await call_activity(RESOLVE_AGENTS, ResolveAgentsRequest(names=names))
        except ActivityError as err:
            error = run_error(err)
            if error.type == UNKNOWN_AGENT:
                raise ApplicationError(error.message, type=UNKNOWN_AGENT, non_retryable=True) from None
            raise
        self._profiles = {profile.name: profile for profile in profiles}

    def specs(self) -> list[ToolSpec]:
        """What the model sees of the agents (none at the depth bound)."""
        if self.depth >= self.limit:
            return []
        return [self._spec(tool) for tool in self._tools.values()]

    def _spec(self, tool: AgentTool) -> ToolSpec:
        profile = self._profiles.get(tool.profile or tool.name)
        description = (
            tool.description or (profile.description if profile else "") or f"Ask the {tool.name} agent"
        )
        return ToolSpec(name=tool.name, description=description, parameters=_PARAMETERS)

    def _config(self, tool: AgentTool) -> AgentConfig:
        if tool.config is not None:
            return tool.config
        return self._profiles[tool.profile or tool.name].config

    def interrupt(self) -> None:
        """Cancel every running child (an interrupting steer of this run): their calls end interrupted."""
        for call_id, workflow_id in self._running.items():
            if call_id in self._interrupted:
                continue
            self._interrupted.add(call_id)
            handle = workflow.get_external_workflow_handle(workflow_id)
            reason = "the calling agent's user interrupted with new input"
            self._signals.add(asyncio.create_task(_cancel(handle, reason)))

    async def call(self, call: ToolCall, on_started: OnStarted) -> ToolOutcome:
        """Run the agent `call` names as a child run; its answer (or failure) is the outcome."""
        try:
            raw: object = json.loads(call.arguments or "{}")
        except json.JSONDecodeError as exc:
            return _failed(INVALID_ARGUMENTS, f"arguments are not valid JSON: {exc.msg}")
        arguments: dict[str, JsonValue] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        problem = query_problem(arguments) if isinstance(raw, dict) else "arguments must be a JSON object"
        if problem is not None:
            return _failed(INVALID_ARGUMENTS, problem)
        if self.depth >= self.limit:
            message = f"agent {call.name} cannot be called: this run is at max_agent_depth {self.limit}"
            return _failed(AGENT_DEPTH_EXCEEDED, message)
        config = self._config(self._tools[call.name])
        share = self._share(config)
        if share is None:
            message = (
                f"agent {call.name} cannot be called: this run's agents have used max_agent_runs "
                f"{self.runs_limit} (agent runs of the whole tree)"
            )
            return _failed(AGENT_RUNS_EXCEEDED, message)
        query = str(arguments["query"])
        self._started += 1
        info = workflow.info()
        child_id = bounded_id(info.workflow_id, f"/agent-{self._started}", max_chars=MAX_WORKFLOW_ID_BYTES)
        child_input = RunInput(
            query=query,
            config=config,
            agent_depth=self.depth + 1,
            agent_depth_limit=self.limit,
            agent_runs_limit=share,
        )
        self._held[call.id] = 1 + share
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                child_input,
                id=child_id,
                task_queue=info.task_queue,
                result_type=RunResult,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
                static_summary=f"agent {call.name}: {preview(query)}"[:200],
            )
        except BaseException:
            del self._held[call.id]
            raise
        self._running[call.id] = child_id
        on_started(call, child_id)
        try:
            result: RunResult = await handle
        except ChildWorkflowError as err:
            self._spent += self._held.pop(call.id)  # what it started is unknown: all it could have
            error = run_error(err)
            return _failed(
                error.type,
                f"agent {call.name} failed: {error.message}",
                agent_workflow_id=child_id,
                usage=Usage(agent_runs=1),
            )
        finally:
            self._running.pop(call.id, None)
        self._held.pop(call.id)
        usage = result.outcome.usage.plus(Usage(agent_runs=1))
        self._spent += usage.agent_runs
        return self._outcome(call, result, child_id, usage)

    def _share(self, config: AgentConfig) -> int | None:
        """The agent runs a new child may start in its turn (None: no child may start now).

        A child takes one run for itself and at most half of the rest, so siblings started
        after it still find some; a child that offers no agents takes none.
        """
        left = self.runs_limit - self._spent - sum(self._held.values())
        if left < 1 and workflow.patched(PATCH_AGENT_RUNS_BOUND):
            return None
        depth_limit = min(self.limit, config.max_agent_depth)
        if not config.agents or self.depth + 1 >= depth_limit:
            return 0
        return max(0, min((left - 1) // 2, config.max_agent_runs))

    def _outcome(self, call: ToolCall, result: RunResult, child_id: str, usage: Usage) -> ToolOutcome:
        if call.id in self._interrupted:
            self._interrupted.discard(call.id)
            message = f"agent {call.name} was cancelled: the user interrupted with new input"
            return _failed(CANCELLED, message, usage=usage, agent_workflow_id=child_id)
        answer = result.result
        if result.status != "completed" or answer is None:
            error = result.outcome.error
            why = error.message if error is not None else f"it ended {result.status} without an answer"
            kind = error.type if error is not None else CANCELLED
            return _failed(kind, f"agent {call.name}: {why}", usage=usage, agent_workflow_id=child_id)
        return ToolOutcome(
            ok=True, result=cut_result(answer), attempts=1, usage=usage, agent_workflow_id=child_id
        )


async def _cancel(handle: workflow.ExternalWorkflowHandle[Any], reason: str) -> None:
    try:
        await handle.signal("cancel", CancelInput(reason=reason))
    except FailureError as err:  # the child ended meanwhile: nothing to cancel
        workflow.logger.info("could not cancel agent run %s: %s", handle.id, err)
