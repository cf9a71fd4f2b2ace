"""Pure decisions of the session: request overrides, ask validation, and acks for control input.

Kept apart from the workflow so that they are easy to read and to test, and so that
update validators (which must not change state) and handlers share one definition.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError

from contracts import Ack, AgentConfig, RunInput, SteerInput
from contracts.session import AskInput, RequestRecord
from workflows.validation import input_problems

OVERRIDABLE = frozenset(AgentConfig.model_fields)


def effective_config(config: AgentConfig, overrides: Mapping[str, object]) -> AgentConfig:
    """The session's config with this request's overrides applied (raises ValidationError if invalid)."""
    return AgentConfig.model_validate({**config.model_dump(), **overrides})


def ask_problems(config: AgentConfig, ask: AskInput) -> list[str]:
    """Every reason to reject an ask, as sentences; empty when it may run."""
    unknown = sorted(set(ask.overrides) - OVERRIDABLE)
    if unknown:
        return [f"unknown override(s) {', '.join(unknown)}; allowed: {', '.join(sorted(OVERRIDABLE))}"]
    try:
        effective = effective_config(config, ask.overrides)
    except ValidationError as err:
        return [f"invalid overrides: {err.errors()[0]['loc']}: {err.errors()[0]['msg']}"]
    return input_problems(RunInput(query=ask.query, config=effective))


def input_ack(active: RequestRecord | None, payload: SteerInput) -> Ack:
    """Whether steer/inject input may be forwarded: `rejected` with a reason, else `queued`."""
    if active is None:
        return Ack(status="rejected", reason="idle", message="no request is running")
    if not payload.content.strip():
        return Ack(status="rejected", reason="blank_content", message="content must not be blank")
    if payload.expected_request_id is not None and payload.expected_request_id != active.request_id:
        return Ack(
            status="rejected",
            reason="request_mismatch",
            message=f"expected request {payload.expected_request_id!r} but {active.request_id!r} is running",
        )
    return Ack(status="queued")
