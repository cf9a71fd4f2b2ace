"""The tool step of a run: one round of calls (tools, agents, memory), their approvals, what it records.

`ToolStep` owns the round in flight (`ToolRound`), the approvals (`ApprovalBook`) and the
agents offered as tools (`AgentCalls`); the `RunLoop` asks it to run a round, append its
results, interrupt it, or decide an approval. It records each call's start and end, each
approval asked for and decided (trace events, Web UI details), and adds an agent's usage
to the run's.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError

from contracts import Ack, LLMResponse, RunInput, ToolCallRequest, ToolCallStatus, ToolOutcome
from contracts.activities import CHECK_TOOL_ARGUMENTS
from contracts.approval import ApproveInput, ArgumentsCheck, PendingApproval
from contracts.errors import ACTIVITY_ERROR, ALREADY_DECIDED, INVALID_ARGUMENTS, NOT_RUNNING
from contracts.llm import ToolSpec
from conversation import ToolCall
from workflows.activity_calls import call_activity
from workflows.run.agent_state import AgentStateBook
from workflows.run.agent_tools import AgentCalls, query_problem
from workflows.run.approvals import ApprovalBook, Verdict
from workflows.run.ledger import RunLedger
from workflows.run.memory import RunMemory
from workflows.run.record import RunRecord
from workflows.run.recorded_tools import RecordedTools
from workflows.run.tool_round import ToolRound, execute_tool
from workflows.run.trace_log import preview


class ToolStep:
    """Runs a run's tool rounds; the run's approvals and agents live here."""

    def __init__(
        self,
        run: RunInput,
        record: RunRecord,
        ledger: RunLedger,
        details: Callable[[], None],
        memory: RunMemory,
    ) -> None:
        """Run the tools, agents and memory tools of `run.config`, recording into `record` and `ledger`."""
        self._config = run.config
        self._memory = memory
        self._record = record
        self._ledger = ledger
        self._details = details
        self._round = ToolRound()
        self._approvals = ApprovalBook(run.config, run.webhook, run.request_id)
        self._agents = AgentCalls(run)
        self._agent_names = frozenset(agent.name for agent in run.config.agents)
        self._recorded = RecordedTools(run.recorded_tool_results)
        self._local: frozenset[str] = frozenset()
        self._checking: set[str] = set()  # calls whose edited approve is being checked, in arrival order
        self.state = AgentStateBook(run.agent_state, run.config.effect_policy)

    async def prepare(self) -> list[ToolSpec]:
        """Resolve the agents' profiles (before the first LLM call); the specs to offer (agents, memory).

        Raises:
            ApplicationError: `unknown_agent` (non-retryable).
        """
        await self._agents.resolve()
        return [*self._agents.specs(), *self._memory.specs()]

    @property
    def in_flight(self) -> bool:
        """Whether a round is running (and has not been interrupted already)."""
        return self._round.in_flight

    @property
    def interrupted(self) -> bool:
        """Whether the last round was interrupted."""
        return self._round.interrupted

    @property
    def statuses(self) -> list[ToolCallStatus]:
        """The round's calls, for `state`."""
        return self._round.statuses

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        """The calls waiting for a decision, for `state`."""
        return self._approvals.pending

    async def run(self, response: LLMResponse) -> None:
        """Run the response's calls; every call has an outcome afterwards (see `close`)."""
        self._local = frozenset(response.local_tools)

        def request_for(call: ToolCall) -> ToolCallRequest:
            return ToolCallRequest(call=call, tool_context=self.state.tool_context(self._config.tool_context))

        await self._round.run(
            response.tool_calls,
            self._config,
            request_for,
            self._execute,
            self,
            self._approvals,
            frozenset(response.approval_tools),
        )

    async def _execute(self, call: ToolCall, request: ToolCallRequest) -> ToolOutcome:
        recorded = self._recorded.take(call)  # only a run given recorded results has any: no command
        if recorded is not None:
            return recorded
        if self._agents.offers(call.name):
            return await self._agents.call(call, self._agent_started)
        if self._memory.offers(call.name):
            return await self._memory.call(call)
        return await execute_tool(call, request, self._config, call.name in self._local)

    def close(self) -> None:
        """Apply the round's state effects, then append its results in the original call order.

        Unfinished calls get `cancelled`; a call's rejected effects are in its result.
        """
        for call, outcome in self.state.apply_round(self._round.close(), self._record):
            content = json.dumps(outcome.for_model(), ensure_ascii=False)
            self._record.append("tool", content, tool_call_id=call.id, name=call.name)

    def interrupt(self, cancel_tools: bool) -> None:
        """An interrupting steer: no new calls, waiting approvals end unrun, agents are cancelled.

        With `cancel_tools`, running tools are cancelled too.
        """
        self._round.interrupt(cancel_tools, spare=self._agent_names)
        self._agents.interrupt()

    # ---- approvals ---------------------------------------------------------------------------

    async def approve(self, payload: ApproveInput) -> Ack:
        """Decide a waiting call, or refuse by name (`unknown_call`, `invalid_arguments`, ...)."""
        call_id = payload.call_id
        while call_id in self._checking:  # an earlier edited approve of this call is checked first
            await workflow.wait_condition(lambda: call_id not in self._checking)
        refusal = self._unhonoured(payload) or self._approvals.refusal(payload)
        call = self._approvals.call_of(call_id)
        if refusal is None and call is not None and payload.arguments is not None:
            self._checking.add(call_id)
            try:
                problem = await self._arguments_problem(call, payload)
            finally:
                self._checking.discard(call_id)
            # stopped or cancelled while we checked?
            refusal = problem or self._unhonoured(payload) or self._approvals.refusal(payload)
        if refusal is not None:
            data = {"kind": "approve", "reason": refusal.reason, "message": refusal.message}
            self._record.event("input_rejected", call_id=payload.call_id, data=data)
            return refusal.model_copy(update={"call_id": payload.call_id})
        return self._approvals.decide(payload)

    def _unhonoured(self, payload: ApproveInput) -> Ack | None:
        """A refusal when a waiting call would not run whatever the decision.

        The run is cancelling (whether or not the call still waits: a cancel applied in the same
        activation may already have ended its round), or an interrupting steer stopped its round
        (both can come in the same activation as this approve, before the waiting call wakes).
        """
        if self._ledger.cancelling:
            return Ack.rejected(NOT_RUNNING, "the run is being cancelled: no call will run")
        if self._approvals.call_of(payload.call_id) is None:
            return None  # not waiting: `ApprovalBook.refusal` names why
        if self._round.interrupted:
            message = f"call {payload.call_id} no longer waits: its round was stopped"
            return Ack.rejected(ALREADY_DECIDED, message)
        return None

    async def _arguments_problem(self, call: ToolCall, payload: ApproveInput) -> Ack | None:
        assert payload.arguments is not None
        if self._agents.offers(call.name):
            problem = query_problem(payload.arguments)
        else:
            try:
                check = ArgumentsCheck(name=call.name, arguments=payload.arguments)
                problem = (await call_activity(CHECK_TOOL_ARGUMENTS, check)).problem
            except ActivityError as err:
                return Ack.rejected(ACTIVITY_ERROR, f"could not check the arguments: {err.cause or err}")
        if problem is None:
            return None
        return Ack.rejected(INVALID_ARGUMENTS, f"arguments for {call.name} do not fit its schema: {problem}")

    # ---- what the round reports (`RoundEvents`) ------------------------------------------------

    def started(self, call: ToolCall) -> None:
        """A call starts: name the tools being called, record it."""
        self._details()
        data = {"name": call.name, "arguments": preview(call.arguments)}
        self._record.event("tool_started", call_id=call.id, data=data)

    def completed(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """A call ended: record it; an agent's usage counts as the run's."""
        if outcome.usage is not None:
            self._ledger.add_usage(outcome.usage)
        summary = preview(json.dumps(outcome.for_model(), ensure_ascii=False))
        data = {"name": call.name, "ok": outcome.ok, "outcome": summary}
        self._record.event("tool_completed", call_id=call.id, data=data)

    def approval_requested(self, call: ToolCall, pending: PendingApproval) -> None:
        """A call waits for approval: record it and show it in the Web UI."""
        data = {
            "name": call.name,
            "arguments": preview(call.arguments),
            "deadline": pending.deadline.isoformat(),
        }
        self._record.event("approval_requested", call_id=call.id, data=data)
        self._details()

    def approval_decided(self, call: ToolCall, verdict: Verdict) -> None:
        """A waiting call was decided: record who decided what."""
        decision = verdict.decision
        data = {
            "name": call.name,
            "verdict": decision.verdict,
            "approved": decision.approved,
            "approver": decision.approver,
            "reason": preview(decision.reason) if decision.reason else None,
            "edited": decision.edited,
        }
        self._record.event("approval_decided", call_id=call.id, data=data)
        self._details()

    def _agent_started(self, call: ToolCall, workflow_id: str) -> None:
        self._round.started_agent(call.id, workflow_id)
        data = {"agent": call.name, "workflow_id": workflow_id}
        self._record.event("agent_started", call_id=call.id, data=data)
        workflow.logger.info("agent %s runs as %s", call.name, workflow_id)
