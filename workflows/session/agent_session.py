"""The `AgentSession` workflow: one long-lived conversation; each request runs as a `ReActRun` child.

The class is thin, like `ReActRun`: it builds the session's components (`SessionParts`:
the conversation in `SessionThread`, its only writer; the config in `SessionSettings`;
the requests in `RequestBook` and `SessionRequests`; the pending op in `OpSlot`;
forwarding to the active run in `RunForwarder`) and hands them to `SessionLoop` (serving
requests, status, fork, export, continuing as new) and `SessionControls` (the control
surface); every handler decodes and delegates to one of them. Start input that does
not decode (or a workflow id no session may have: `contracts.workflow_ids`) fails the
session once with its named error, and every ask is refused with that error (no run is
ever promised). The session continues as new when due,
only while idle (no request active or waiting) and after every handler has finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts import AgentConfig, ControlAck, ThreadPage, ThreadQuery
from contracts.branches import Branch, BranchList
from contracts.decoding import PayloadProblem, decode_args
from contracts.effects import AgentStateValue
from contracts.errors import INVALID_INPUT
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
from contracts.session_memo import RenameInput
from contracts.workflow_ids import workflow_id_problem
from conversation import Context
from workflows import controls
from workflows.refusals import decode_or_refuse, decode_start, refusal
from workflows.session import thread_memo
from workflows.session.controls import SessionControls
from workflows.session.fork import fork_problem
from workflows.session.loop import SessionLoop
from workflows.session.parts import SessionParts

_PLACEHOLDER = SessionInput(agent_id="", config=AgentConfig(model="none"))


def _id_problem(workflow_id: str) -> PayloadProblem | None:
    """A session whose id could not travel in the ids that carry it fails at its start, by name."""
    problem = workflow_id_problem(workflow_id, "the session's workflow id")
    return None if problem is None else PayloadProblem(INVALID_INPUT, problem)


@workflow.defn(name=SESSION_WORKFLOW_TYPE)
class AgentSession:
    """A conversation that outlives every run; reachable by its workflow id alone."""

    @workflow.init
    def __init__(self, *args: Any) -> None:
        """Restore carried state (after continue-as-new) or start an empty conversation."""
        session, self._problem = decode_start(args, SessionInput, "AgentSession input", _PLACEHOLDER)
        if self._problem is None and session.carry is None:
            self._problem = _id_problem(workflow.info().workflow_id)
            session = _PLACEHOLDER if self._problem is not None else session
        self._parts = SessionParts.build(session)
        self._session = SessionLoop(session, self._parts)
        self._controls = SessionControls(self._parts)
        controls.register(self._controls.controls())

    @workflow.run
    async def run(self, *args: Any) -> None:
        """Serve requests one at a time; continue as new when due, while idle."""
        if self._problem is not None:
            raise refusal(self._problem)
        # The memo (title, last use) is passed on whole: listings read it from the newest run.
        workflow.continue_as_new(await self._session.run(), memo=workflow.memo())

    def _check(self, problem_of: Callable[[], ApplicationError | None]) -> None:
        """Refuse by the start input's problem (the session fails at once), else by `problem_of()`."""
        if self._problem is not None:
            raise refusal(self._problem)
        problem = problem_of()
        if problem is not None:
            raise problem

    def _check_ask(self, args: Sequence[Any]) -> None:
        self._check(lambda: self._parts.asks.problem(decode_or_refuse(args, AskInput, "ask")))

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
        ref = decode_or_refuse(args, RequestRef, "await_result")
        return await self._parts.requests.result_of(ref.request_id)

    @await_result.validator
    def _validate_await_result(self, *args: Any) -> None:
        decode_or_refuse(args, RequestRef, "await_result")

    @workflow.update(name="ask_sync")
    async def ask_sync(self, *args: Any) -> RequestResult:
        """Ask, then wait for the result."""
        accepted = await self._session.accept(decode_or_refuse(args, AskInput, "ask_sync"))
        return await self._parts.requests.result_of(accepted.request_id)

    @ask_sync.validator
    def _validate_ask_sync(self, *args: Any) -> None:
        self._check_ask(args)

    @workflow.signal(name="control_ack")
    def control_ack(self, *args: Any) -> None:
        """A run's answer to input or a cancel this session forwarded (internal)."""
        try:
            self._parts.forwarder.answer(decode_args(args, ControlAck, "control_ack", required=True))
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
        payload = decode_or_refuse(args, ForkInput, "fork")
        parts = self._parts
        # While a run is active, the entries it will append may make the seq valid: the handler
        # (`SessionLoop.fork`) waits for them.
        self._check(lambda: None if parts.book.active else fork_problem(payload, parts.thread.next_seq))

    @workflow.update(name="record_branch")
    def record_branch(self, *args: Any) -> BranchList:
        """Record a branch of the family this session is the root of (the newest is its head)."""
        return self._session.record_branch(decode_or_refuse(args, Branch, "record_branch"))

    @record_branch.validator
    def _validate_record_branch(self, *args: Any) -> None:
        branch = decode_or_refuse(args, Branch, "record_branch")
        self._check(lambda: self._session.branch_problem(branch))

    @workflow.update(name="rename")
    def rename(self, *args: Any) -> RenameInput:
        """Name this thread: its listings show the title from now on (`contracts.session_memo`)."""
        named = decode_or_refuse(args, RenameInput, "rename")
        thread_memo.rename(named.title)
        return named

    @rename.validator
    def _validate_rename(self, *args: Any) -> None:
        decode_or_refuse(args, RenameInput, "rename")
        self._check(lambda: None)

    # ---- queries ---------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> SessionStatus:
        """Idle or running, the active request, and the config for the next run."""
        return self._session.status()

    @workflow.query(name="branches")
    def branches(self) -> BranchList:
        """The branches of the family this session is the root of, oldest first."""
        return self._session.branches()

    @workflow.query(name="thread")
    def thread(self, *args: Any) -> ThreadPage:
        """A page of the thread (`{since_seq, limit}`); archived parts come back as a segment reference."""
        return self._parts.thread.page(decode_or_refuse(args, ThreadQuery, "thread"))

    @workflow.query(name="context")
    def context(self, *args: Any) -> Context:
        """A lane's materialized context (default: the active lane)."""
        return self._parts.thread.lane(decode_or_refuse(args, ContextQuery, "context").context_ref)

    @workflow.query(name="agent_state")
    def agent_state(self) -> AgentStateValue:
        """The agent state (a JSON object) the next run's tools start from."""
        return AgentStateValue(self._parts.requests.agent_state)

    @workflow.query(name="requests")
    def requests(self) -> list[RequestRecord]:
        """The last requests, oldest first (a run's trace is on its run workflow: query `trace` there)."""
        return self._parts.book.records
