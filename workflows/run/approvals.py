"""Human approval of tool calls: which calls wait, the durable wait, and every decision.

A call needs approval when the agent config lists its tool in `approval_required` or
the worker's registry marks the tool `requires_approval` (`LLMResponse.approval_tools`).
It waits with a timer (`approval_timeout_s`, in history like every wait, so it survives
worker restarts) until `approve` decides it; at the deadline `approval_on_timeout`
decides (`deny` by default). The decision becomes the call's outcome: a denial is a
tool result telling the model why, an approval runs the call (with edited arguments,
if the approver gave some, and a `note` saying so).

`ApprovalBook` owns the waiting calls and the decisions of the run; the `approve`
control asks it first (`refusal`), then decides (`decide`). A refusal changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

from contracts import Ack, AgentConfig, ToolError, ToolOutcome
from contracts.approval import ApprovalDecision, ApproveInput, PendingApproval
from contracts.errors import (
    ALREADY_DECIDED,
    APPROVAL_NOT_REQUIRED,
    APPROVAL_TIMEOUT,
    DENIED,
    UNKNOWN_CALL,
)
from contracts.webhooks import WebhookBody, WebhookData, WebhookTarget
from conversation import ToolCall
from workflows.webhook_child import start_delivery

PATCH_APPROVAL_WEBHOOKS = "approval-webhooks"
"""A run given a `webhook` starts an `approval.waiting` webhook's delivery (a child) when a call waits."""
SHOWN_ARGUMENTS_CHARS = 4_000
"""How much of a waiting call's arguments `state` shows (`PendingApproval.arguments`)."""


@dataclass
class _Waiting:
    call: ToolCall
    pending: PendingApproval
    decision: ApprovalDecision | None = None
    arguments: str | None = None  # edited arguments (JSON text) of an approval


@dataclass(frozen=True)
class Verdict:
    """A decided call: its decision, and either the call to run (approved) or the outcome (denied)."""

    decision: ApprovalDecision
    call: ToolCall | None = None
    outcome: ToolOutcome | None = None
    note: str | None = None


class ApprovalBook:
    """The run's waiting calls and its decisions."""

    def __init__(
        self, config: AgentConfig, webhook: WebhookTarget | None = None, request_id: str | None = None
    ) -> None:
        """Approvals under `config`'s `approval_required`, `approval_timeout_s`, `approval_on_timeout`.

        With `webhook`, each call that starts waiting sends an `approval.waiting` webhook naming
        `request_id` (`workflows.webhook_child`).
        """
        self._config = config
        self._webhook = webhook
        self._request_id = request_id
        self._announced = 0
        self._required = frozenset(config.approval_required)
        self._waiting: dict[str, _Waiting] = {}
        self._decided: dict[str, ApprovalDecision] = {}
        self._not_required: set[str] = set()
        self._unrun: set[str] = set()  # stopped waiting undecided: an interrupt, or the run's cancel

    def needs(self, call: ToolCall, marked: frozenset[str]) -> bool:
        """Whether `call` waits for approval (`marked`: the tools the worker marks); remembers the answer."""
        needed = call.name in self._required or call.name in marked
        if not needed:
            self._not_required.add(call.id)
        return needed

    @property
    def pending(self) -> list[PendingApproval]:
        """The calls waiting for a decision, in the order they began to wait."""
        return [waiting.pending for waiting in self._waiting.values() if waiting.decision is None]

    def call_of(self, call_id: str) -> ToolCall | None:
        """The waiting call with this id, if one waits."""
        waiting = self._waiting.get(call_id)
        return waiting.call if waiting is not None and waiting.decision is None else None

    def decided(self, call_id: str) -> ApprovalDecision | None:
        """The decision on a call that no longer waits, if it was decided."""
        return self._decided.get(call_id)

    def refusal(self, payload: ApproveInput) -> Ack | None:
        """Why `approve` cannot decide this call now (`unknown_call`, ...), or None when it can."""
        call_id = payload.call_id
        if self.call_of(call_id) is not None:
            return None
        if call_id in self._decided or call_id in self._waiting:
            verdict = self._decided.get(call_id) or self._waiting[call_id].decision
            what = verdict.verdict.replace("_", " ") if verdict is not None else "decided"
            return Ack.rejected(ALREADY_DECIDED, f"call {call_id} was already {what}")
        if call_id in self._unrun:
            return Ack.rejected(ALREADY_DECIDED, f"call {call_id} no longer waits: its round was stopped")
        if call_id in self._not_required:
            return Ack.rejected(APPROVAL_NOT_REQUIRED, f"call {call_id} needs no approval")
        return Ack.rejected(UNKNOWN_CALL, f"no tool call of this run has id {call_id!r}")

    def decide(self, payload: ApproveInput) -> Ack:
        """Decide a waiting call (check `refusal` first): the waiting call wakes with the decision."""
        waiting = self._waiting[payload.call_id]
        waiting.decision = ApprovalDecision(
            call_id=payload.call_id,
            verdict="approved" if payload.approved else "denied",
            approved=payload.approved,
            approver=payload.approver,
            reason=payload.reason,
            edited=payload.arguments is not None,
            decided_at=workflow.now(),
        )
        if payload.arguments is not None:
            waiting.arguments = json.dumps(payload.arguments, ensure_ascii=False)
        verb = "approved" if payload.approved else "denied"
        return Ack(status="accepted", call_id=payload.call_id, message=f"call {payload.call_id} {verb}")

    def ask(self, call: ToolCall) -> PendingApproval:
        """`call` waits for approval from now on (then `wait` for the decision)."""
        timeout = self._config.approval_timeout_s
        now = workflow.now()
        shown = call.arguments[:SHOWN_ARGUMENTS_CHARS]
        self._decided.pop(call.id, None)  # a provider may reuse an id in a later round
        self._unrun.discard(call.id)
        waiting = self._waiting[call.id] = _Waiting(
            call,
            PendingApproval(
                call_id=call.id,
                name=call.name,
                arguments=shown,
                arguments_truncated=len(shown) < len(call.arguments),
                requested_at=now,
                deadline=now + timedelta(seconds=timeout),
                on_timeout=self._config.approval_on_timeout,
            ),
        )
        return waiting.pending

    async def wait(self, call: ToolCall, stop: Callable[[], bool]) -> Verdict | None:
        """Wait for the decision on `call` (asked) or its deadline; None when `stop()` turns true first.

        Raises:
            asyncio.CancelledError: the run is being cancelled (the call then gets `cancelled`).
        """
        timeout = self._config.approval_timeout_s
        waiting = self._waiting[call.id]
        try:
            if self._webhook is not None and workflow.patched(PATCH_APPROVAL_WEBHOOKS):
                await self._announce(call, self._webhook)
            await workflow.wait_condition(
                lambda: waiting.decision is not None or stop(),
                timeout=timeout,
                timeout_summary=f"approval of {call.name} {call.id}"[:200],
            )
        except TimeoutError:
            approve = self._config.approval_on_timeout == "approve"
            waiting.decision = ApprovalDecision(
                call_id=call.id, verdict="timed_out", approved=approve, decided_at=workflow.now()
            )
        finally:
            del self._waiting[call.id]
            if waiting.decision is not None:
                self._decided[call.id] = waiting.decision
            else:
                self._unrun.add(call.id)
        if waiting.decision is None:
            return None
        return self._verdict(waiting, waiting.decision)

    async def _announce(self, call: ToolCall, webhook: WebhookTarget) -> None:
        """Start the `approval.waiting` webhook of `call` (the run does not wait for its delivery)."""
        self._announced += 1
        data = WebhookData.of_session(
            webhook.thread_id,
            agent=webhook.agent,
            request_id=self._request_id,
            status="waiting_approval",
            call_id=call.id,
            tool=call.name,
        )
        body = WebhookBody(type="approval.waiting", timestamp=workflow.now(), data=data)
        await start_delivery(webhook.url, f"approval-{self._announced}", body)

    def _verdict(self, waiting: _Waiting, decision: ApprovalDecision) -> Verdict:
        call = waiting.call
        who = decision.approver or "the user"
        reason = f": {decision.reason}" if decision.reason else ""
        if decision.verdict == "timed_out":
            timeout = f"{self._config.approval_timeout_s:g}s"
            if not decision.approved:
                message = f"nobody approved this call within {timeout}, so it was not run"
                error = ToolError(type=APPROVAL_TIMEOUT, message=message)
                return Verdict(decision, outcome=ToolOutcome(ok=False, attempts=0, error=error))
            note = f"approved automatically: nobody decided within {timeout}"
            return Verdict(decision, call=call, note=note)
        if not decision.approved:
            error = ToolError(type=DENIED, message=f"{who} denied this call{reason}")
            return Verdict(decision, outcome=ToolOutcome(ok=False, attempts=0, error=error))
        if waiting.arguments is not None:
            edited = call.model_copy(update={"arguments": waiting.arguments})
            note = f"{who} approved this call with edited arguments {waiting.arguments}{reason}"
            return Verdict(decision, call=edited, note=note)
        note = f"{who} approved this call{reason}" if decision.reason else None
        return Verdict(decision, call=call, note=note)
