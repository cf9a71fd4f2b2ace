"""The `ReActRun` workflow: one ReAct run (reason + act, tool calling) as one workflow execution.

The run hosts a Workflow Stream (`workflows.run.stream`) with its trace events and,
when the agent streams, its LLM calls' deltas. The class is thin: it builds the
`RunLedger` (progress and outcome) and the `RunRecord` (thread and trace) and passes
them to `RunLoop` (the loop and the state it drives: input queue, op slot, LLM calls,
tool step), which offers intents (`offer_input`, `accept_cancel`, `defer_op`, `state`)
rather than its parts, and to `RunControls`, the control surface; every handler is a
delegation. Input that does not decode fails the workflow once with `invalid_input`
(never a workflow task failing over and over).
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from contracts import (
    WORKFLOW_TYPE,
    AgentConfig,
    ResolveToolsRequest,
    RunInput,
    RunResult,
    RunState,
    ThreadPage,
    ThreadQuery,
    Trace,
)
from contracts.activities import MODEL_MEDIA, RESOLVE_TOOLS
from contracts.errors import INVALID_INPUT, UNSUPPORTED_MEDIA_TYPE
from contracts.llm import ModelMediaRequest
from conversation import Context
from conversation.media import media_problem, needs_image_check
from workflows import controls
from workflows.activity_calls import call_activity
from workflows.failures import run_error
from workflows.refusals import decode_or_refuse, decode_start, refusal
from workflows.run.controls import RunControls
from workflows.run.ledger import RunLedger
from workflows.run.loop import RunLoop
from workflows.run.record import RunRecord
from workflows.run.stream import RunStream
from workflows.validation import input_problems

PATCH_TOOLS_IN_LLM_CALL = "llm-call-resolves-tools"
"""Version 1 resolved tools in an activity of its own; runs now let the LLM activity do it."""
_PLACEHOLDER = RunInput(query="", config=AgentConfig(model="none"))


@workflow.defn(name=WORKFLOW_TYPE)
class ReActRun:
    """One steerable, durable ReAct run."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """Set up state before any handler runs, so early signals and queries see a whole run."""
        run, self._problem = decode_start(args, RunInput, "ReActRun input", _PLACEHOLDER)
        self._input = run
        self._stream = RunStream(run.config.stream_poll_updates)
        request_id = run.request_id or str(workflow.uuid4())
        ledger = RunLedger(run.config.max_iterations)
        if self._problem is not None:
            ledger.refuse_start()
        self._record = RunRecord(run, request_id, workflow.info().run_id, ledger, self._stream)
        self._run = RunLoop(run, ledger, self._record, self._stream)
        self._controls = RunControls(self._run, self._record)
        controls.register(self._controls.controls(), self._controls.dropped)

    @workflow.run
    async def run(self, *args: Any) -> RunResult:
        """Run the loop to a terminal state, apply the deferred op, and return the outcome."""
        try:
            if self._problem is not None:
                raise refusal(self._problem)
            problems = input_problems(self._input)
            if problems:
                raise ApplicationError("; ".join(problems), type=INVALID_INPUT, non_retryable=True)
            media = await self._media_problem()
            if media is not None:
                raise ApplicationError(media, type=UNSUPPORTED_MEDIA_TYPE, non_retryable=True)
            if self._input.config.tools and not workflow.patched(PATCH_TOOLS_IN_LLM_CALL):
                await self._resolve_tools_v1()
            result = await self._run.run()
        finally:
            self._stream.close()  # release subscribers' polls: they drain the closed run by query
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _media_problem(self) -> str | None:
        """Why the query's attachments cannot go to the model (`model_media` only for a provider's images)."""
        model, attachments = self._input.config.model, self._input.query_attachments
        takes_images: bool | None = None
        if needs_image_check(model, attachments):
            takes_images = (await call_activity(MODEL_MEDIA, ModelMediaRequest(model=model))).images
        return media_problem(model, attachments, takes_images)

    async def _resolve_tools_v1(self) -> None:
        """Replays of version-1 histories only: the tool check was an activity of its own."""
        try:
            await call_activity(RESOLVE_TOOLS, ResolveToolsRequest(names=self._input.config.tools))
        except ActivityError as err:
            raise ApplicationError(run_error(err).message, type=INVALID_INPUT, non_retryable=True) from None

    @workflow.query(name="state")
    def state(self) -> RunState:
        """Status, iteration, the tool round in flight, usage and outcome."""
        return self._run.state()

    @workflow.query(name="thread")
    def thread(self, *args: Any) -> ThreadPage:
        """A page of the run's thread (`{since_seq, limit}`; it starts with the seed context, if any)."""
        query = decode_or_refuse(args, ThreadQuery, "thread")
        return self._record.page(query)

    @workflow.query(name="context")
    def context(self) -> Context:
        """The materialized context of the active lane."""
        return self._record.context

    @workflow.query(name="trace")
    def trace(self) -> Trace:
        """The run's event trace (bounded; see `workflows.run.trace_log`)."""
        return self._record.trace()
