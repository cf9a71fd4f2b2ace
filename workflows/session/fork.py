"""Forking a session at a seq of its thread, seeding a forked session, and resetting the thread.

`fork` starts a new `AgentSession` as a child that outlives this one
(`ParentClosePolicy.ABANDON`): its lane starts from the projection of this session's
lane at the fork seq (the lane entry `seq` belongs to: the lane active after it), as a
`replace` op with reason `system`, like a run's seed context; it gets this session's
config, policy and agent state, and names its parent in `forked_from`. A seq beyond
the thread is refused (`seq_out_of_range`) before anything changes. The projection is
folded from the thread with the session's lane window; when entries up to the seq are
archived, the archive is read back (one `read_segment` per segment up to the seq).

`reset_thread` is a `replace` op with an empty context (the lane keeps its own system
prompt, if its anchor had one) and `meta.reset`, through the rule of every context op
(applied when idle, deferred while a run is active). The old entries stay in the
thread: append-only.
"""

from __future__ import annotations

from pydantic_core import to_json
from temporalio import workflow
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError

from contracts.activities import READ_SEGMENT
from contracts.errors import INVALID_INPUT, PAYLOAD_TOO_LARGE, SEQ_OUT_OF_RANGE
from contracts.limits import MAX_CONTEXT_BYTES
from contracts.session import SESSION_WORKFLOW_TYPE, ForkInput, ForkOrigin, ResetInput, SessionInput
from contracts.workflow_ids import MAX_SESSION_ID_CHARS, bounded_id
from conversation import (
    DEFAULT_CONTEXT_REF,
    Context,
    ContextModifyInput,
    ContextOpPayload,
    ConversationState,
    Entry,
)
from conversation.policy import ContextPolicy
from conversation.projection import LaneViews
from workflows.activity_calls import call_activity
from workflows.session.thread import SessionThread

MAX_ID_ATTEMPTS = 20
"""Generated fork ids tried (`<id>-fork-<n>`, n counting up) before giving up."""
PATCH_FORK_NUMBERS_TAKEN = "fork-numbers-taken"
"""Each generated fork id's number is taken before its start is awaited (concurrent forks: distinct ids)."""
PATCH_BOUNDED_FORK_IDS = "bounded-fork-ids"
"""A generated fork id over `MAX_SESSION_ID_CHARS` is cut to fit (it used to grow without bound)."""
PATCH_FORK_WAIT_BOUNDED = "fork-wait-bounded"
"""A fork at a seq past the thread waits at most `FORK_WAIT_S` for a running request to end (it waited
until that request ended, however long: a fork of junk held its caller as long as the run ran)."""
FORK_WAIT_S = 1.0


def fork_problem(payload: ForkInput, thread_length: int) -> ApplicationError | None:
    """Why `fork` cannot fork at `payload.seq` (`seq_out_of_range`), or None."""
    if thread_length == 0:
        message = "the thread is empty: nothing to fork"
        return ApplicationError(message, type=SEQ_OUT_OF_RANGE, non_retryable=True)
    if payload.seq is not None and payload.seq >= thread_length:
        message = f"seq {payload.seq} is beyond the thread (its last seq is {thread_length - 1})"
        return ApplicationError(message, type=SEQ_OUT_OF_RANGE, non_retryable=True)
    return None


async def projection_at(thread: SessionThread, conversation: ConversationState, seq: int) -> Context:
    """The context of the lane of entry `seq` as it stood right after that entry (windowed like the lanes).

    Its system prompt is the lane's own (`seed_context`), not the session's configured one.
    Seq -1 is before the first entry: an empty context (the configured prompt applies).
    """
    if seq == -1:
        return Context()
    if seq == conversation.next_seq - 1:
        return seed_context(conversation.views, conversation.active_context_ref)
    views = LaneViews()
    lane: str | None = None
    for ref in thread.archive:
        if ref.first_seq > seq:
            break
        segment = await call_activity(READ_SEGMENT, ref)
        lane = _fold(views, segment.entries, seq, conversation.window_chars) or lane
    lane = _fold(views, conversation.thread, seq, conversation.window_chars) or lane
    assert lane is not None
    return seed_context(views, lane)


def seed_context(views: LaneViews, lane: str) -> Context:
    """A lane as a fork's seed carries it: with the prompt the lane has of its own.

    That is its anchor's, else the latest replace's; never the configured prompt, which the
    fork's config carries instead. So the fork's lane follows the fork's `set_system_prompt`,
    as a reset or rollback lane does.
    """
    view = views.view(lane)
    prompt = view.anchor_prompt if view.anchor_prompt is not None else views.replaced_prompt
    return Context(system_prompt=prompt, summary=view.summary, messages=list(view.messages))


def _fold(views: LaneViews, entries: list[Entry], seq: int, window_chars: int | None) -> str | None:
    """Feed the entries up to `seq`; the lane of entry `seq`, when it is among them."""
    lane: str | None = None
    for entry in entries:
        if entry.seq > seq:
            break
        views.feed(entry, window_chars)
        if entry.seq == seq:
            lane = entry.payload.context_ref
    return lane


class ForkNumbers:
    """The numbers of the generated fork ids (`<id>-fork-<n>`): each taken once, before its start is awaited.

    Concurrent forks each take their own n, so none of them finds its id taken by a sibling.
    """

    def __init__(self, started: int) -> None:
        """`started`: the numbers taken so far (carried through continue-as-new)."""
        self.started = started

    def take(self) -> int:
        """The next number."""
        self.started += 1
        return self.started

    def took(self, n: int) -> None:
        """Number `n` was taken by a fork of a history from before `take` (counted from its start)."""
        self.started = n


def fork_id(parent: str, n: int) -> str:
    """The generated id of fork `n` of session `parent`: `<parent>-fork-<n>`, cut to fit a session id.

    A chain of forks grows 7 characters a generation; past `MAX_SESSION_ID_CHARS` the parent's
    id is cut and a digest of it inserted (`contracts.workflow_ids.bounded_id`).
    """
    plain = f"{parent}-fork-{n}"
    if len(plain) <= MAX_SESSION_ID_CHARS or not workflow.patched(PATCH_BOUNDED_FORK_IDS):
        return plain
    return bounded_id(parent, f"-fork-{n}", max_chars=MAX_SESSION_ID_CHARS)


async def start_fork(
    session: SessionInput, origin: ForkOrigin, context: Context, session_id: str | None, numbers: ForkNumbers
) -> str:
    """Start the forked session as a child that outlives this one; its id.

    `session` is the child's input without the fork fields. A generated id
    (`<this id>-fork-<n>`) that already runs is skipped for the next n.

    Raises:
        ApplicationError: `invalid_input`, when `session_id` (or every generated id tried) runs already;
            `payload_too_large`, when the context is over `MAX_CONTEXT_BYTES`.
    """
    size = len(to_json(context))
    if size > MAX_CONTEXT_BYTES:
        message = f"the context at seq {origin.seq} is {size} bytes of JSON; the limit is {MAX_CONTEXT_BYTES}"
        raise ApplicationError(message, type=PAYLOAD_TOO_LARGE, non_retryable=True)
    child = session.model_copy(update={"forked_from": origin, "fork_context": context, "carry": None})
    parent = workflow.info().workflow_id
    attempts = 1 if session_id is not None else MAX_ID_ATTEMPTS
    # Histories from before: numbers counted from the value at the fork's start (concurrent forks collided).
    first = None if workflow.patched(PATCH_FORK_NUMBERS_TAKEN) else numbers.started
    for attempt in range(attempts):
        n = numbers.take() if first is None else first + attempt + 1
        child_id = session_id if session_id is not None else fork_id(parent, n)
        try:
            await workflow.start_child_workflow(
                SESSION_WORKFLOW_TYPE,
                child,
                id=child_id,
                task_queue=workflow.info().task_queue,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=f"fork of {parent} at seq {origin.seq}",
            )
        except WorkflowAlreadyStartedError:
            continue
        if first is not None:
            numbers.took(n)
        return child_id
    taken = session_id if session_id is not None else f"{parent}-fork-<n> ({attempts} tried)"
    raise ApplicationError(f"a workflow with id {taken} already runs", type=INVALID_INPUT, non_retryable=True)


def seed_fork(session: SessionInput, thread: SessionThread, policy: ContextPolicy) -> None:
    """Start a forked session's lane from `fork_context` (nothing for any other session).

    The lane window is widened to `policy` first, so the seed keeps what the parent's lane kept.
    """
    op = fork_seed(session)
    if op is not None:
        thread.widen(policy)
        thread.restore(op)


def fork_seed(session: SessionInput) -> ContextOpPayload | None:
    """The `replace` op that starts a forked session's lane from `fork_context` (None: not a fork)."""
    if session.fork_context is None or session.forked_from is None:
        return None
    origin = session.forked_from
    return ContextOpPayload.model_validate(
        {
            "op_id": bounded_id(f"fork:{origin.parent_id}", f":{origin.seq}"),
            "context_ref": DEFAULT_CONTEXT_REF,
            "operation": {
                "type": "replace",
                "reason": "system",
                "result_context": session.fork_context,
                "meta": {"forked_from": origin.parent_id, "fork_seq": origin.seq},
            },
        }
    )


def reset_request(payload: ResetInput, thread: SessionThread) -> ContextModifyInput:
    """The `context_modify` request of `reset_thread`: an empty context on the active lane, marked a reset."""
    lane = thread.active_context_ref
    meta: dict[str, object] = {"reset": True}
    if payload.reason:
        meta["reason"] = payload.reason
    return ContextModifyInput.model_validate(
        {
            "op_id": payload.op_id or f"reset-{workflow.uuid4()}",
            "context_ref": lane,
            "operation": {
                "type": "replace",
                "reason": "manual",
                "result_context": {"system_prompt": thread.lane_as_it_stands(lane).system_prompt},
                "meta": meta,
            },
        }
    )
