"""The one rule for context ops (`workflows.op_slot`), for a `context_modify` request and a compaction alike.

Pure: a `ConversationState` (a run's) or anything with `active_context_ref` and
`is_applied` (a session's `SessionThread`) is the target; no workflow is needed.
"""

from __future__ import annotations

from contracts import Ack
from conversation import Context, ContextModifyInput, ConversationState, OperationInput
from conversation.compaction import compaction_op
from tests.conversation_helpers import T0, replace, user
from workflows.op_slot import OpSlot, duplicate, op_ack, settle


def request(op_id: str) -> ContextModifyInput:
    context = Context(messages=[user("kept")])
    return ContextModifyInput(op_id=op_id, operation=OperationInput(type="replace", result_context=context))


def test_a_request_is_applied_when_idle_deferred_while_running_and_a_duplicate_once_applied() -> None:
    state = ConversationState.new("base")
    applied, op = op_ack(state, request("op-1"), running=False)
    assert applied == Ack(status="applied", op_id="op-1") and op is not None
    deferred, later = op_ack(state, request("op-2"), running=True)
    assert (deferred.status, deferred.op_id, later is not None) == ("deferred", "op-2", True)
    state.apply_operation(op, T0)
    again, nothing = op_ack(state, request("op-1"), running=True)
    assert (again.status, nothing) == ("duplicate", None)


def test_an_invalid_request_is_rejected_by_name() -> None:
    bad = ContextModifyInput(op_id="op-x", operation=OperationInput(type="switch"))
    ack, op = op_ack(ConversationState.new(), bad, running=False)
    assert (ack.status, ack.reason, ack.op_id, op) == ("rejected", "invalid_op", "op-x", None)


def test_a_compaction_goes_through_the_same_rule() -> None:
    state = ConversationState.new("base")
    replace(state, "seed", [user("a"), user("b")])
    compaction = compaction_op("compact-1", state.active_context_ref, state.context, [], "summary", 0, {})
    assert duplicate(state, "compact-1") is None
    deferred, op = settle(state, compaction, running=True)
    assert deferred.status == "deferred" and op is compaction
    slot = OpSlot()
    assert slot.defer(compaction) is None and slot.take() is compaction
    applied, op = settle(state, compaction, running=False)
    assert applied.status == "applied" and op is not None
    state.apply_operation(op, T0)
    seen = duplicate(state, "compact-1")
    assert seen is not None and seen.status == "duplicate"
    assert settle(state, compaction, running=False)[0] == seen
