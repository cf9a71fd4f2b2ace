"""What steer/inject input a run accepts: one definition for the run and the session that forwards to it.

`input_rejection` holds the rules that depend only on the input and the request it
targets; `InputQueue.offer` adds the rules about the run's queue (`queue_full`,
`sealed`), which only the run can know. A session checks `input_rejection` before
forwarding, then returns the run's own `Ack` (it never acks what the run rejects).
"""

from __future__ import annotations

from contracts import Ack, SteerInput
from contracts.errors import BLANK_CONTENT, REQUEST_MISMATCH


def input_rejection(payload: SteerInput, serving_request_id: str) -> Ack | None:
    """The rejection for input aimed at the run serving `serving_request_id`, or None if acceptable."""
    if not payload.content.strip():
        return Ack.rejected(BLANK_CONTENT, "content must not be blank")
    if payload.expected_request_id is not None and payload.expected_request_id != serving_request_id:
        return Ack.rejected(
            REQUEST_MISMATCH,
            f"expected request {payload.expected_request_id!r} but {serving_request_id!r} is running",
        )
    return None
