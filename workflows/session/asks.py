"""What an ask does: the one rule of the `ask` validator and handler, and every answer to a busy session.

`problem` is the rule (read-only: the validator's); `accept` checks it again and acts.
An ask retried with a known `request_id` is answered with the original `AskAccepted`
whatever its `on_busy` says (kept for the last `MAX_KEPT_REQUESTS` asks; across
continue-as-new a recorded request is answered as `started`). An idle session starts
the ask. A busy one, by `on_busy`:

- `reject`: refused (`busy`).
- `enqueue`: recorded now, run after the active request and the asks waiting before it.
- `steer`: forwarded to the active run as queued steer input; the run's own `Ack`
  decides. If the run ends first (`idle`, or `sealed`: it is finishing), the ask is
  decided again once it has ended: it steers the next active request or starts.
- `interrupt` / `rollback`: recorded now, waiting ahead of every enqueued ask; the
  active request is cancelled through the run's own cancel (its deferred op is
  applied as usual). With `rollback`, once it has ended `cancelled`, its lane is put
  back as it stood before the request (`rollback_op`, applied by `SessionRequests.run`).
  If it ended otherwise first (the run finished at the same moment), the ask simply
  starts after it: `started`, and nothing is rolled back.

Every waiting ask counts toward `MAX_QUEUED_ASKS` (past it: `ask_queue_full`).
`expected_last_request` names the request the caller believes was recorded last;
another one is refused as `stale` (None: no expectation, so with no request yet any
named request is stale).
"""

from __future__ import annotations

from collections import OrderedDict

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from contracts import CancelInput, SteerInput
from contracts.errors import ASK_QUEUE_FULL, BUSY, IDLE, SEALED, STALE
from contracts.limits import MAX_QUEUED_ASKS
from contracts.session import MAX_KEPT_REQUESTS, AskAccepted, AskInput, RequestRecord
from contracts.workflow_ids import bounded_id
from conversation import Context, ContextOperation, ContextOpPayload
from workflows.refusals import refusal
from workflows.session.request_book import RequestBook
from workflows.session.run_forwarding import RunForwarder
from workflows.session.settings import SessionSettings


def rollback_op(request_id: str, context_ref: str, context: Context) -> ContextOpPayload:
    """The recorded op that puts a rolled-back request's lane back to `context` (its lane before it)."""
    operation = ContextOperation(
        type="replace", reason="system", result_context=context, meta={"rollback_of": request_id}
    )
    op_id = bounded_id(f"rollback-{request_id}", "")  # a request id may be as long as an op id
    return ContextOpPayload(op_id=op_id, context_ref=context_ref, operation=operation)


def _follows(ask: AskInput, active: RequestRecord, book: RequestBook) -> bool:
    """Whether `ask` would be refused `busy` only by a request its caller saw end (`after_request_id`).

    Such an ask waits for the session to apply that end rather than being refused (`_after_ended`);
    with other asks waiting it would be busy anyway, and is refused.
    """
    return ask.on_busy == "reject" and ask.after_request_id == active.request_id and book.waiting_count == 0


def _accepted(record: RequestRecord, **fields: object) -> AskAccepted:
    return AskAccepted.model_validate(
        {"request_id": record.request_id, "run_workflow_id": record.run_workflow_id, **fields}
    )


class SessionAsks:
    """Decides what each ask does and answers it; the `RequestBook` keeps the requests."""

    def __init__(self, book: RequestBook, settings: SessionSettings, forwarder: RunForwarder) -> None:
        """Bind the session's components."""
        self._book = book
        self._settings = settings
        self._forwarder = forwarder
        self._answers: OrderedDict[str, AskAccepted] = OrderedDict()
        self._deciding: set[str] = set()

    def problem(self, ask: AskInput) -> ApplicationError | None:
        """Why an ask cannot be accepted now (read-only: the `ask` validator's rule), or None."""
        if ask.request_id and self._known(ask.request_id):
            return None  # a retried ask: answered with the original answer
        book = self._book
        expected, last = ask.expected_last_request, book.last_request_id
        if expected is not None and expected != last:
            since = f"request {last} is" if last is not None else "no request is"
            return ApplicationError(f"expected request {expected!r} last, but {since} the last", type=STALE)
        active = book.active
        if active is not None and ask.on_busy == "reject" and not _follows(ask, active, book):
            message = f"the session is running request {active.request_id}; wait for it or cancel it"
            busy = {"request_id": active.request_id, "run_workflow_id": active.run_workflow_id}
            return ApplicationError(message, busy, type=BUSY)
        if active is not None and ask.on_busy != "steer" and book.waiting_count >= MAX_QUEUED_ASKS:
            message = f"{MAX_QUEUED_ASKS} asks already wait for request {active.request_id}"
            return ApplicationError(message, type=ASK_QUEUE_FULL)
        problem = self._settings.ask_problem(ask)
        return refusal(problem) if problem is not None else None

    async def accept(self, ask: AskInput) -> AskAccepted:
        """Act on an ask by the rule of `problem` (raised if any) and say what happened."""
        retried = ask.request_id or None
        await self._settings.learn_media(ask)  # an activity only for images to a provider model
        if retried is not None and retried in self._deciding:  # its first attempt is still being decided
            await workflow.wait_condition(lambda: retried not in self._deciding)
        known = self._answer(retried) if retried is not None else None
        if known is not None:
            return known
        problem = self.problem(ask)
        if problem is not None:
            raise problem
        active = self._book.active
        if active is None:
            return self._remember(self._start(ask))
        request_id = ask.request_id or str(workflow.uuid4())
        if _follows(ask, active, self._book):
            return self._remember(await self._after_ended(ask, request_id), request_id)
        if ask.on_busy == "enqueue":
            record, position = self._wait(ask, request_id, replacement=False)
            return self._remember(_accepted(record, disposition="enqueued", position=position))
        self._deciding.add(request_id)
        try:
            if ask.on_busy == "steer":
                answer = await self._steer(ask, request_id, active)
            else:
                answer = await self._replace(ask, request_id, active, rollback=ask.on_busy == "rollback")
        finally:
            self._deciding.discard(request_id)
        return self._remember(answer, request_id)

    # ---- the policies ----------------------------------------------------------------------

    async def _after_ended(self, ask: AskInput, request_id: str) -> AskAccepted:
        """An ask whose caller saw the active request end: it starts once the session applies that end.

        It waits (the only one: nothing else waits) and answers `started` when its run is the
        next to start, as it would have had the session applied the end first.
        """
        record, _ = self._wait(ask, request_id, replacement=False)
        self._deciding.add(request_id)
        try:
            await workflow.wait_condition(
                lambda: self._book.active is record or record.finished_at is not None
            )
        finally:
            self._deciding.discard(request_id)
        return _accepted(record)

    def _start(self, ask: AskInput, request_id: str | None = None) -> AskAccepted:
        request_id = request_id or ask.request_id or str(workflow.uuid4())
        run = self._settings.run_input(ask, request_id)
        webhook_url = self._settings.webhook_of(ask)
        record = self._book.open(run, workflow.info().workflow_id, workflow.now(), webhook_url)
        return _accepted(record)

    def _wait(self, ask: AskInput, request_id: str, *, replacement: bool) -> tuple[RequestRecord, int]:
        run = self._settings.run_input(ask, request_id)
        return self._book.wait(
            run,
            workflow.info().workflow_id,
            workflow.now(),
            replacement=replacement,
            webhook_url=self._settings.webhook_of(ask),
        )

    async def _steer(self, ask: AskInput, request_id: str, active: RequestRecord | None) -> AskAccepted:
        while active is not None:
            steer = SteerInput(
                content=ask.query,
                expected_request_id=active.request_id,
                source="ask",
                refs={"ask_request_id": request_id},
                mode="queue",
            )
            ack = await self._forwarder.forward_input("steer", steer, wait=True)
            if ack.status == "queued":
                return _accepted(active, disposition="steered", input_id=ack.input_id)
            if ack.reason not in (IDLE, SEALED):  # e.g. the run's input queue is full
                raise ApplicationError(ack.message or "the run refused the steer", type=ack.reason)
            active = await self._after(active)
        await self._settings.learn_media(ask)  # the config may have changed while it waited
        problem = self._settings.ask_problem(ask)
        if problem is not None:
            raise refusal(problem)
        return self._start(ask, request_id)

    async def _after(self, ended: RequestRecord) -> RequestRecord | None:
        """The active request once `ended` is no longer active (None: the session is idle)."""
        await workflow.wait_condition(lambda: self._book.active is not ended)
        return self._book.active

    async def _replace(
        self, ask: AskInput, request_id: str, active: RequestRecord, *, rollback: bool
    ) -> AskAccepted:
        record, _ = self._wait(ask, request_id, replacement=True)
        if rollback:
            self._book.mark_roll_back(active.request_id)
        cancel = CancelInput(reason=f"replaced by request {request_id}")
        await self._forwarder.forward_cancel(cancel, wait=True)
        await workflow.wait_condition(lambda: active.finished_at is not None)
        if active.status != "cancelled":  # it ended by itself first: this ask simply runs next
            return _accepted(record)
        disposition = "rolled_back" if rollback else "interrupted"
        return _accepted(record, disposition=disposition, replaced_request_id=active.request_id)

    # ---- retried asks ----------------------------------------------------------------------

    def _known(self, request_id: str) -> bool:
        return request_id in self._deciding or self._answer(request_id) is not None

    def _answer(self, request_id: str) -> AskAccepted | None:
        if request_id in self._answers:
            return self._answers[request_id]
        record = self._book.find(request_id)
        return _accepted(record) if record is not None else None

    def _remember(self, answer: AskAccepted, ask_id: str | None = None) -> AskAccepted:
        self._answers[ask_id or answer.request_id] = answer
        while len(self._answers) > MAX_KEPT_REQUESTS:
            self._answers.popitem(last=False)
        return answer
