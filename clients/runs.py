"""The typed client of runs: start a `ReActRun`, then steer, reshape, cancel and read it by its handle.

    runs = Runs(await connect())
    run = await runs.start("What is 6 * 7?", AgentConfig(model="openai/gpt-4o-mini", tools=["calculator"]))
    await run.steer("Show your working.")
    for call in await run.pending_approvals():  # tool calls waiting for a person (approval_required)
        await run.approve(call.call_id, approver="alice")      # or run.deny(call.call_id, "not now")
    result = await run.result()           # RunResult: outcome, entries, .status, .result

A run is one workflow execution; `runs.get(workflow_id)` addresses one started
elsewhere (by the CLI, by a session: a session's request runs as a child workflow).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from clients import inputs
from clients.base import ClientScope, StoreReader, Timeouts, WorkflowControls
from clients.errors import RejectedError, workflow_rejection
from clients.output import OutputLike, with_output
from clients.run_start import StartWaits, is_not_found
from clients.stream import DEFAULT_POLL_COOLDOWN_S, run_events
from contracts import WORKFLOW_TYPE, AgentConfig, RunResult, RunState, Trace
from contracts.approval import PendingApproval
from contracts.errors import INVALID_INPUT
from contracts.stream import DeltaEvent, TraceItem
from contracts.web_ui import static_details, static_summary
from contracts.workflow_ids import MAX_WORKFLOW_ID_BYTES as MAX_ID
from contracts.workflow_ids import workflow_id_problem
from conversation import DEFAULT_CONTEXT_REF, Context


class RunHandle(WorkflowControls):
    """One run, addressed by its workflow id: controls (steer, approve, cancel, context ops...), queries.

    A session's run that its session has recorded but not started yet (an `enqueued` ask's)
    is waited for: every method waits until it starts (`clients.run_start`), then answers.
    """

    def __init__(self, client: Client, workflow_id: str, timeouts: Timeouts, store: StoreReader) -> None:
        """Address the run `workflow_id` (nothing is sent until a method is called)."""
        super().__init__(client, workflow_id, timeouts, store)
        self._start_waits = StartWaits(client, workflow_id)

    async def _appeared(self) -> bool:
        return await self._start_waits.appeared()

    async def result(self) -> RunResult:
        """Wait for the run to end; its result (also for `failed` and `cancelled` runs).

        Raises:
            RejectedError: the run refused its input (`invalid_input`, `payload_too_large`) and failed.
            WorkflowFailureError: the workflow was terminated or timed out.
        """
        try:
            try:
                raw: object = await self._handle.result()
            except RPCError as error:
                if not (is_not_found(error) and await self._appeared()):
                    raise
                raw = await self._handle.result()
        except WorkflowFailureError as failure:
            rejection = workflow_rejection(failure.cause)
            if rejection is None:
                raise
            raise rejection from failure
        return raw if isinstance(raw, RunResult) else RunResult.model_validate(raw)

    async def state(self) -> RunState:
        """Status, iteration, the tool calls in flight, queued input, usage and outcome."""
        return await self._query("state", RunState)

    async def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls awaiting a decision (`approve` or `deny` them by `call_id`), oldest first."""
        return (await self.state()).pending_approvals

    async def context(self) -> Context:
        """The materialized context of the run's active lane (what its next LLM call projects from)."""
        return await self._context()

    async def trace(self) -> Trace:
        """The run's event trace (LLM and tool calls, input, context ops, the outcome; bounded)."""
        return await self._query("trace", Trace)

    def events(
        self, *, poll_cooldown_s: float = DEFAULT_POLL_COOLDOWN_S
    ) -> AsyncIterator[DeltaEvent | TraceItem]:
        """The run's live events until it has ended: `async for event in run.events(): ...`.

        Trace events (`TraceItem`) come once each, in trace order (missed ones are read back
        from the `trace` query); with the agent config's `stream` on, `DeltaEvent`s carry the
        LLM calls' text as it is produced (`clients.stream.TextAssembler` builds it). A run
        that has already ended yields what its stream kept, then its missed trace events.

        Args:
            poll_cooldown_s: least time between two polls of the stream once caught up.

        Raises:
            RPCError: `NOT_FOUND` when no run has this workflow id (and no session promises it).
        """
        return self._events(poll_cooldown_s)

    async def _events(self, poll_cooldown_s: float) -> AsyncIterator[DeltaEvent | TraceItem]:
        events = run_events(self._client, self.workflow_id, self.trace, poll_cooldown_s=poll_cooldown_s)
        try:
            first = await anext(events)
        except StopAsyncIteration:
            return
        except RPCError as error:
            if not (is_not_found(error) and await self._appeared()):
                raise
            events = run_events(self._client, self.workflow_id, self.trace, poll_cooldown_s=poll_cooldown_s)
            first = await anext(events, None)
            if first is None:
                return
        yield first
        async for event in events:
            yield event


class Runs(ClientScope):
    """Starts runs and addresses them by workflow id."""

    def get(self, workflow_id: str) -> RunHandle:
        """The run with this workflow id (nothing is sent until a method is called)."""
        return RunHandle(self._client, workflow_id, self._timeouts, self._store)

    async def start(
        self,
        query: str,
        config: AgentConfig,
        *,
        workflow_id: str | None = None,
        request_id: str | None = None,
        context: Context | None = None,
        context_ref: str = DEFAULT_CONTEXT_REF,
        output: OutputLike | None = None,
    ) -> RunHandle:
        """Start a run of `config` on `query` and return its handle at once.

        The Web UI lists it by a static summary (model and the query's first words) and
        shows its model, tools and query as its details.

        Args:
            query: the user's question.
            config: the agent: model, tools, limits (see `AgentConfig`).
            workflow_id: the run's workflow id (default `react-<8 hex digits>`).
            request_id: the request id recorded in the thread (default: chosen by the run).
            context: a lane's context to continue from (e.g. a session's); not part of what the run appends.
            context_ref: the lane `context` belongs to.
            output: the final answer's JSON Schema (a pydantic model class, a dict, an `OutputSpec`):
                `RunResult.output` holds the parsed answer (`clients.output`).

        Raises:
            RejectedError: the input is over a limit or invalid (`payload_too_large`, `invalid_input`,
                a `workflow_id` over Temporal's 1,000 bytes); nothing was started.
            WorkflowAlreadyStartedError: a running workflow has this id.
        """
        problem = workflow_id_problem(workflow_id, "workflow_id", max_chars=MAX_ID) if workflow_id else None
        if problem is not None:
            raise RejectedError(INVALID_INPUT, problem)
        config = with_output(config, output)
        run = inputs.run_input(query, config, request_id=request_id, context=context, context_ref=context_ref)
        handle = await self._client.start_workflow(
            WORKFLOW_TYPE,
            run,
            id=workflow_id or f"react-{inputs.new_id()[:8]}",
            task_queue=self._task_queue,
            result_type=RunResult,
            static_summary=static_summary(run.config, run.query),
            static_details=static_details(run.config, run.query, run.request_id),
        )
        return self.get(handle.id)

    async def run(
        self,
        query: str,
        config: AgentConfig,
        *,
        workflow_id: str | None = None,
        request_id: str | None = None,
        output: OutputLike | None = None,
    ) -> RunResult:
        """Start a run and wait for its result (see `start` and `RunHandle.result`)."""
        handle = await self.start(
            query, config, workflow_id=workflow_id, request_id=request_id, output=output
        )
        return await handle.result()


__all__ = ["RejectedError", "RunHandle", "Runs", "Timeouts"]
