"""Property test of THE invariant: the materialized context is the projection of the thread.

Random sequences of steps (append a message, replace a lane, switch lanes, with op ids that
sometimes repeat) are run against a `ConversationState`. After every step:

* `state.context == state.projected()` (projection of the thread for the active lane);
* the context also equals an independent reference model of the documented semantics;
* seqs are 0..n-1 with no gap, and the thread only grows (earlier entries are unchanged);
* for every seq N, `project(thread, lane, at_seq=N)` equals the context recorded right after
  entry N was appended, where `lane` is the lane that was active then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversation import (
    APPLIED_OPS_CAP,
    Context,
    ContextModifyInput,
    ConversationState,
    Message,
    MessagePayload,
    OperationInput,
    Role,
    ToolCall,
    project,
    validate_operation,
)

T0 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
LANES = ["default", "a", "b"]
BASE_PROMPT = "base prompt"


# --- steps ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendStep:
    role: Role
    content: str
    lane: str | None  # None: the active lane
    tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ReplaceStep:
    op_id: str
    lane: str | None  # None: omitted, so the op defaults to the active lane
    system_prompt: str | None
    messages: tuple[Message, ...]
    reason: str = "manual"


@dataclass(frozen=True)
class SwitchStep:
    op_id: str
    lane: str


Step = AppendStep | ReplaceStep | SwitchStep

texts = st.text(alphabet="abcxyz \n", max_size=8)
roles: st.SearchStrategy[Role] = st.sampled_from(["user", "assistant", "tool"])
# A small pool of op ids so that ids repeat fairly often (dedupe), but most are fresh.
op_ids = st.integers(min_value=0, max_value=40).map(lambda n: f"op-{n}")
tool_calls = st.lists(
    st.builds(ToolCall, id=st.sampled_from(["c1", "c2"]), name=st.sampled_from(["f", "g"]), arguments=texts),
    min_size=1,
    max_size=2,
).map(tuple)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(roles)
    return Message(
        role=role,
        content=draw(texts),
        tool_calls=list(draw(tool_calls)) if role == "assistant" and draw(st.booleans()) else None,
        tool_call_id="c1" if role == "tool" else None,
    )


@st.composite
def append_steps(draw: st.DrawFn) -> AppendStep:
    role = draw(roles)
    # Mostly the active lane, occasionally another one.
    lane = draw(st.one_of(st.just(None), st.just(None), st.just(None), st.sampled_from(LANES)))
    return AppendStep(
        role=role,
        content=draw(texts),
        lane=lane,
        tool_calls=draw(tool_calls) if role == "assistant" and draw(st.booleans()) else None,
        tool_call_id="c1" if role == "tool" else None,
    )


replace_steps = st.builds(
    ReplaceStep,
    op_id=op_ids,
    lane=st.one_of(st.none(), st.sampled_from(LANES)),
    system_prompt=st.one_of(st.none(), st.sampled_from(["prompt 1", "prompt 2", "prompt 3"])),
    messages=st.lists(messages(), max_size=3).map(tuple),
    reason=st.sampled_from(["manual", "restore", "compaction", "system"]),
)
switch_steps = st.builds(SwitchStep, op_id=op_ids, lane=st.sampled_from(LANES))
steps: st.SearchStrategy[Step] = st.one_of(append_steps(), append_steps(), replace_steps, switch_steps)


# --- reference model -----------------------------------------------------------------------


@dataclass
class Lane:
    anchor_prompt: str | None = None
    messages: list[Message] = field(default_factory=lambda: [])


@dataclass
class Model:
    """The documented semantics, written independently of `conversation.projection`."""

    active: str
    current_prompt: str | None
    lanes: dict[str, Lane] = field(default_factory=lambda: {})
    applied: list[str] = field(default_factory=lambda: [])

    def lane(self, ref: str) -> Lane:
        return self.lanes.setdefault(ref, Lane())

    def context(self) -> Context:
        lane = self.lane(self.active)
        prompt = lane.anchor_prompt if lane.anchor_prompt is not None else self.current_prompt
        return Context(system_prompt=prompt, messages=[m.model_copy(deep=True) for m in lane.messages])


# --- running steps -------------------------------------------------------------------------


@dataclass
class Run:
    state: ConversationState
    model: Model
    # For every seq: the lane active right after it was appended, and the context then.
    recorded: list[tuple[str, Context]] = field(default_factory=lambda: [])
    # The JSON dump of every entry as it was when appended.
    dumps: list[dict[str, Any]] = field(default_factory=lambda: [])


def apply_step(run: Run, step: Step, at: datetime) -> bool:
    """Apply one step to the state and the model; return whether an entry was appended."""
    state, model = run.state, run.model
    if isinstance(step, AppendStep):
        lane = step.lane if step.lane is not None else state.active_context_ref
        payload = MessagePayload(
            role=step.role,
            content=step.content,
            context_ref=lane,
            request_id="req",
            run_id="run",
            tool_calls=[tc.model_copy() for tc in step.tool_calls] if step.tool_calls is not None else None,
            tool_call_id=step.tool_call_id,
        )
        entry = state.append_message(payload, at)
        assert entry.payload.context_ref == lane
        model.lane(lane).messages.append(
            Message(
                role=step.role,
                content=step.content,
                tool_calls=list(step.tool_calls) if step.tool_calls is not None else None,
                tool_call_id=step.tool_call_id,
            )
        )
        return True

    if isinstance(step, ReplaceStep):
        request = ContextModifyInput(
            op_id=step.op_id,
            context_ref=step.lane,
            operation=OperationInput(
                type="replace",
                reason=step.reason,
                result_context=Context(
                    system_prompt=step.system_prompt,
                    messages=[m.model_copy(deep=True) for m in step.messages],
                ),
            ),
        )
    else:
        request = ContextModifyInput(
            op_id=step.op_id, context_ref=step.lane, operation=OperationInput(type="switch")
        )

    op = validate_operation(request, state.active_context_ref)
    expected_lane = step.lane if step.lane is not None else model.active
    assert op.context_ref == expected_lane

    if step.op_id in model.applied:
        before = state.model_dump()
        assert state.is_applied(step.op_id)
        assert state.apply_operation(op, at) is None
        assert state.model_dump() == before, "a duplicate op must change nothing"
        return False

    entry = state.apply_operation(op, at)
    assert entry is not None
    assert entry.payload.op_id == step.op_id
    model.applied = [step.op_id, *model.applied][:APPLIED_OPS_CAP]
    model.active = expected_lane
    if isinstance(step, ReplaceStep):
        model.lanes[expected_lane] = Lane(
            anchor_prompt=step.system_prompt, messages=[m.model_copy(deep=True) for m in step.messages]
        )
        if step.system_prompt is not None:
            model.current_prompt = step.system_prompt
    return True


def check(run: Run, appended: bool, length_before: int) -> None:
    state, model = run.state, run.model
    thread = state.thread

    # The thread only grows, by exactly one entry per applied step.
    assert len(thread) == length_before + (1 if appended else 0)
    # Seqs are 0..n-1, gap-free.
    assert [entry.seq for entry in thread] == list(range(len(thread)))
    # Earlier entries are unchanged.
    assert [entry.model_dump(mode="json") for entry in thread[: len(run.dumps)]] == run.dumps
    if appended:
        run.dumps.append(thread[-1].model_dump(mode="json"))
        run.recorded.append((state.active_context_ref, state.context.model_copy(deep=True)))
        assert state.next_seq == len(thread)

    # THE invariant, and agreement with the reference model.
    assert state.context == state.projected()
    assert state.context == project(thread, state.active_context_ref, base_system_prompt=BASE_PROMPT)
    assert state.active_context_ref == model.active
    assert state.context == model.context()
    assert state.applied_context_ops == model.applied

    # Every prefix: projection at seq N equals the context recorded right after entry N.
    for seq, (lane, context) in enumerate(run.recorded):
        assert project(thread, lane, base_system_prompt=BASE_PROMPT, at_seq=seq) == context, seq
        assert state.projected(lane, at_seq=seq) == context, seq


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(steps, max_size=30))
def test_context_is_always_the_projection_of_the_thread(step_list: list[Step]) -> None:
    state = ConversationState.new(BASE_PROMPT)
    run = Run(state=state, model=Model(active=state.active_context_ref, current_prompt=BASE_PROMPT))
    assert state.context == state.projected() == run.model.context()
    for index, step in enumerate(step_list):
        length_before = len(state.thread)
        appended = apply_step(run, step, T0 + timedelta(seconds=index))
        check(run, appended, length_before)

    # The whole run survives a JSON round trip, and the invariant still holds afterwards.
    restored = ConversationState.model_validate_json(state.model_dump_json())
    assert restored == state
    assert restored.context == restored.projected()


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=30))
def test_switch_entries_are_not_folded(step_list: list[Step]) -> None:
    """Dropping every switch entry from the thread changes no lane's projection."""
    state = ConversationState.new(BASE_PROMPT)
    run = Run(state=state, model=Model(active=state.active_context_ref, current_prompt=BASE_PROMPT))
    for index, step in enumerate(step_list):
        apply_step(run, step, T0 + timedelta(seconds=index))
    without_switches = [
        entry
        for entry in state.thread
        if entry.kind == "ai_message" or entry.payload.operation.type != "switch"
    ]
    for lane in [*LANES, "never-used"]:
        assert project(state.thread, lane, base_system_prompt=BASE_PROMPT) == project(
            without_switches, lane, base_system_prompt=BASE_PROMPT
        )
