"""The signal, Update and start payloads of `ReActRun` and `AgentSession`, written out for the fuzz tests.

Each handler has its fields (how to break each one), a valid base payload, what no
argument means, and payloads that decode but must be refused (`Handler`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from tests.fuzz_payload_shapes import ASK, CONFIG, MODEL_SETTINGS, OPERATION, RUN_INPUT, SESSION_INPUT, STEER
from tests.fuzz_values import (
    INVALID,
    KIB,
    Expect,
    Spec,
    errors,
    ident,
    integer,
    json_object,
    model,
    real,
    reasons,
    text,
)

Target = Literal["run", "session"]
Kind = Literal["signal", "update"]


@dataclass(frozen=True)
class Handler:
    """A payload's fields and a valid base, what no argument means, and payloads that decode but are refused.

    `defaults` is None when no argument is a valid, state-changing payload (a cancel, a
    compaction): the fuzz does not send it. `counted` names the run trace's counter that a
    refused payload bumps (a payload that does not decode bumps `input_rejected`).
    """

    fields: dict[str, Spec]
    base: dict[str, Any]
    defaults: Expect | None = None
    refused: tuple[tuple[dict[str, Any], Expect], ...] = ()
    kinds: tuple[Kind, ...] = ("signal", "update")
    counted: str | None = "input_rejected"


def refused(*payloads: dict[str, Any], expect: Expect) -> tuple[tuple[dict[str, Any], Expect], ...]:
    return tuple((payload, expect) for payload in payloads)


BLANK = reasons("blank_content")
STEER_HANDLER = Handler(
    STEER,
    {"content": "junk"},
    BLANK,
    refused({"content": " \n\t"}, expect=BLANK)
    + refused(
        {"content": "x", "expected_request_id": "not-the-running-one"}, expect=reasons("request_mismatch")
    ),
)
BAD_OPS = refused(
    {"op_id": " ", "operation": {"type": "switch"}, "context_ref": "lane"},
    {"op_id": "o", "operation": {"type": "nope"}},
    {"op_id": "o", "operation": {"type": "replace"}},
    {"op_id": "o", "operation": {"type": "switch"}},
    {"op_id": "o", "operation": {"type": "switch", "reason": "whim"}, "context_ref": "lane"},
    expect=reasons("invalid_op"),
)
CONTEXT_MODIFY = Handler(
    {
        "op_id": ident(required=True),
        "context_ref": ident(),
        "operation": model(OPERATION, {"type": "switch"}),
    },
    {"op_id": "fuzz-op", "context_ref": "fuzz-lane", "operation": {"type": "switch"}},
    reasons("invalid_op"),
    BAD_OPS,
    counted="context_op_rejected",
)
APPROVE = {
    "call_id": ident(required=True),
    "approved": Spec(st.sampled_from([[], {}, "maybe", 2, 1.5])),
    "reason": text(1_000),
    "arguments": json_object(64 * KIB, nullable=True),  # null: the call's own arguments
    "approver": text(200),
    "approval_id": ident(),
    "reply_to": ident(),
}
REQUIRED = errors(INVALID)
EDITED_DENIAL = {"call_id": "fuzz-call", "approved": False, "arguments": {"x": 1}}
RUN_HANDLERS: dict[str, Handler] = {
    "steer": STEER_HANDLER,
    "inject": STEER_HANDLER,
    "cancel": Handler({"reason": text(1_000), "cancel_id": ident(), "reply_to": ident()}, {}),
    "context_modify": CONTEXT_MODIFY,
    "approve": Handler(  # no argument lacks `call_id`: the validator's, uncounted (as a broken payload)
        APPROVE,
        {"call_id": "fuzz-call"},
        None,
        refused(
            {"call_id": "fuzz-call"}, {"call_id": "c", "approved": False}, expect=reasons("unknown_call")
        ),
        kinds=("update",),
    ),
}
TOOL_NAME = {"name": text(64, required=True)}
SESSION_HANDLERS: dict[str, Handler] = {
    **RUN_HANDLERS,
    "compact": Handler({"op_id": ident(), "model": text(200)}, {}),
    "set_system_prompt": Handler({"system_prompt": text(100_000)}, {"system_prompt": "x"}),
    "register_tool": Handler(
        TOOL_NAME,
        {"name": "echo"},
        REQUIRED,
        refused({"name": "no_such_tool"}, expect=reasons("unknown_tool")),
    ),
    "unregister_tool": Handler(
        TOOL_NAME,
        {"name": "echo"},
        REQUIRED,
        refused({"name": "not_registered"}, expect=reasons("unknown_tool")),
    ),
    "set_tool_context": Handler({"tool_context": json_object(64 * KIB)}, {"tool_context": {}}),
    "set_model": Handler(
        {"model": text(200, required=True), "model_settings": model(MODEL_SETTINGS, {})},
        {"model": "scripted"},
        REQUIRED,
        refused({"model": "  "}, expect=reasons(INVALID)),
    ),
    "export": Handler(
        {"context_ref": ident(), "ttl_s": real(0, 10 * 365 * 86_400, above_low=True)},
        {},
        Expect(answer=True),
        refused({"context_ref": "no-such-lane"}, expect=Expect(answer=True)),
        kinds=("update",),
    ),
    "await_result": Handler(
        {"request_id": ident(required=True)},
        {"request_id": "r"},
        REQUIRED,
        refused({"request_id": "unknown"}, expect=errors("unknown_request")),
        kinds=("update",),
    ),
    "ask": Handler(
        ASK,
        {"query": "q"},
        REQUIRED,
        refused(
            {"query": "q", "overrides": {"llm_timeout_s": 1e308}},
            {"query": "q", "overrides": {"no_such_field": 1}},
            {"query": "q", "overrides": {"llm_max_attempts": 2**40}},
            expect=errors("busy", INVALID),
        ),
        kinds=("update",),
    ),
    "control_ack": Handler(
        {
            "id": text(None, required=True),
            "ack": model({"status": text(None, required=True)}, {"status": "queued"}),
        },
        {"id": "x", "ack": {"status": "queued"}},
        Expect(),
        kinds=("signal",),
    ),
}
SESSION_HANDLERS["ask_sync"] = SESSION_HANDLERS["ask"]
SESSION_HANDLERS["approve"] = Handler(
    APPROVE,
    {"call_id": "fuzz-call"},
    REQUIRED,
    refused({"call_id": "fuzz-call"}, expect=reasons("unknown_call", "idle"))
    + refused(EDITED_DENIAL, expect=errors(INVALID)),
    kinds=("update",),
    counted=None,
)
SESSION_HANDLERS["fork"] = Handler(
    {"seq": integer(-1, None, optional=True), "session_id": ident(), "branch_of": ident()},
    {"seq": 10**9},
    None,
    refused({"seq": 10**9}, {"seq": 2**62}, expect=errors("seq_out_of_range")),
    kinds=("update",),
    counted=None,
)
SESSION_HANDLERS["rename"] = Handler(
    {"title": text(80, required=True)},
    {"title": "Fuzzed"},
    REQUIRED,
    refused({"title": " "}, {"title": "two\nlines"}, expect=errors(INVALID)),
    kinds=("update",),
    counted=None,
)
SESSION_HANDLERS["reset_thread"] = Handler(
    {"op_id": ident(), "reason": text(1_000)}, {}, None, kinds=("update",), counted=None
)
SNAPSHOT_ERRORS = errors(
    "snapshot_prefix", "snapshot_format", "snapshot_encoding", "snapshot_signature", "snapshot_payload"
)
START_HANDLERS: dict[Target, Handler] = {
    "run": Handler(
        RUN_INPUT,
        {"query": "q", "config": CONFIG},
        REQUIRED,
        refused(
            {"query": "  ", "config": CONFIG},
            {"query": "q", "config": {**CONFIG, "model": " "}},
            {"query": "q", "config": {**CONFIG, "tools": ["echo", "echo"]}},
            {"query": "q", "config": {**CONFIG, "model_settings": {"extra": {"api_key": "k"}}}},
            {"query": "q", "config": {**CONFIG, "tools": ["no_such_tool"]}},
            {"query": "q", "config": CONFIG, "context_ref": " "},
            {"query": "q", "config": {**CONFIG, "agents": [{"name": "echo"}], "tools": ["echo"]}},
            {"query": "q", "config": {**CONFIG, "approval_required": ["not_offered"]}},
            expect=errors(INVALID),
        )
        + refused(
            {"query": "q", "config": {**CONFIG, "agents": [{"name": "nobody"}]}},
            expect=errors("unknown_agent"),
        )
        + refused(
            {"query": "q", "config": {**CONFIG, "output": {"json_schema": {"type": "no-such-type"}}}},
            expect=errors("invalid_schema"),
        ),
    ),
    "session": Handler(
        SESSION_INPUT,
        {"agent_id": "fuzz", "config": CONFIG},
        REQUIRED,
        refused(
            *(
                {"agent_id": "fuzz", "config": CONFIG, "snapshot": token}
                for token in ("", "junk", "rt2.", "rt2.x.y")
            ),
            expect=SNAPSHOT_ERRORS,
        ),
    ),
}
