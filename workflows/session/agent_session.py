"""The `AgentSession` workflow: one long-lived conversation; each request runs as a `ReActRun` child.

The class is thin, like `ReActRun`: the loop and the state it drives live in
`SessionLoop` (the conversation in `SessionThread`, its only writer; the config in
`SessionSettings`; the requests in `RequestBook` and `SessionRequests`; the pending op
in `OpSlot`; forwarding to the active run in `RunForwarder`), the control surface in
`SessionControls`, and every handler decodes and delegates. Start input that does
not decode fails the session once with its named error, and every ask is refused
with that error (no run is ever promised). The session continues as new when due,
only while idle (no request active or waiting) and after every handler has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow

from contracts import AgentConfig, ControlAck, ThreadPage, ThreadQuery
from contracts.decoding import PayloadProblem, decode_args
from contracts.effects import AgentStateValue
from contracts.session import (
    SESSION_WORKFLOW_TYPE,
    AskAccepted,
    AskInput,
    ContextQuery,
    ExportInput,
    ExportResult,
    ForkInput,
    ForkResult,
    RequestRecord,
    RequestRef,
    RequestResult,
    SessionInput,
    SessionStatus,
)
from conversation import Context
from workflows import controls
from workflows.refusals import decode_or_refuse, decode_start, refusal
from workflows.session.controls import SessionControls
from workflows.session.loop import SessionLoop

_PLACEHOLDER = SessionInput(agent_id="", config=AgentConfig(model="none"))


@workflow.defn(name=SESSION_WORKFLOW_TYPE)
class AgentSession:
    """A conversation that outlives every run; reachable by its workflow id alone."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """Restore carried state (after continue-as-new) or start an empty conversation."""
        session, self._problem = decode_start(args, SessionInput, "AgentSession input", _PLACEHOLDER)
        self._session = SessionLoop(session)
        self._controls = SessionControls(self._session)
        controls.register(self._controls.controls())

    @workflow.run
    async def run(self, *args: Any) -> None:
        """Serve requests one at a time; continue as new when due, while idle."""
        if self._problem is not None:
            raise refusal(self._problem)
        workflow.continue_as_new(await self._session.run())

    def _check_ask(self, args: Sequence[Any]) -> None:
        if self._problem is not None:  # the session fails at once: refuse the ask by the same name
            raise refusal(self._problem)
        problem = self._session.ask_problem(decode_or_refuse(args, AskInput, "ask"))
        if problem is not None:
            raise problem

    # ---- handlers --------------------------------------------------------------------------

    @workflow.update(name="ask")
    async def ask(self, *args: Any) -> AskAccepted:
        """Start a run for this query (or act by `on_busy` when one runs); say what happened, with the ids."""
        return await self._session.accept(decode_or_refuse(args, AskInput, "ask"))

    @ask.validator
    def _validate_ask(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.update(name="await_result")
    async def await_result(self, *args: Any) -> RequestResult:
        """Wait until the request is terminal and return its record with the answer."""
        return await self._session.result_of(decode_or_refuse(args, RequestRef, "await_result").request_id)

    @await_result.validator
    def _validate_await_result(self, *args: Any) -> None:
        decode_or_refuse(args, RequestRef, "await_result")

    @workflow.update(name="ask_sync")
    async def ask_sync(self, *args: Any) -> RequestResult:
        """Ask, then wait for the result."""
        accepted = await self._session.accept(decode_or_refuse(args, AskInput, "ask_sync"))
        return await self._session.result_of(accepted.request_id)

    @ask_sync.validator
    def _validate_ask_sync(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.signal(name="control_ack")
    def control_ack(self, *args: Any) -> None:
        """A run's answer to input or a cancel this session forwarded (internal)."""
        try:
            self._session.answer(decode_args(args, ControlAck, "control_ack", required=True))
        except PayloadProblem as problem:
            workflow.logger.warning("dropped a control_ack signal: %s", problem)

    @workflow.update(name="export")
    async def export(self, *args: Any) -> ExportResult:
        """A signed snapshot token of one lane's context (default: the active lane)."""
        return await self._session.export(decode_or_refuse(args, ExportInput, "export"))

    @export.validator
    def _validate_export(self, *args: Any) -> None:
        decode_or_refuse(args, ExportInput, "export")

    @workflow.update(name="fork")
    async def fork(self, *args: Any) -> ForkResult:
        """Start a new session from this one's thread at a seq (default: the latest); it outlives this one."""
        return await self._session.fork(decode_or_refuse(args, ForkInput, "fork"))

    @fork.validator
    def _validate_fork(self, *args: Any) -> None:
        if self._problem is not None:
            raise refusal(self._problem)
        problem = self._session.fork_problem(decode_or_refuse(args, ForkInput, "fork"))
        if problem is not None:
            raise problem

    # ---- queries ---------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        return self._session.status()

    @workflow.query(name="thread")
    def thread(self, *args: Any) -> ThreadPage:
        """A page of the thread (`{since_seq, limit}`); archived parts come back as a segment reference."""
        return self._session.page(decode_or_refuse(args, ThreadQuery, "thread"))

    @workflow.query(name="context")
    def context(self, *args: Any) -> Context:
        """A lane's materialized context (default: the active lane)."""
        return self._session.lane(decode_or_refuse(args, ContextQuery, "context").context_ref)

    @workflow.query(name="agent_state")
    def agent_state(self) -> AgentStateValue:
        """The agent state (a JSON object) the next run's tools start from."""
        return AgentStateValue(self._session.agent_state)

    @workflow.query(name="requests")
    def requests(self) -> list[RequestRecord]:
        """The last requests, oldest first (a run's trace is on its run workflow: query `trace` there)."""
        return self._session.records
