"""The run stream's signal, Update and query handlers: they survive any payload.

`temporalio.contrib.workflow_streams.WorkflowStream` registers handlers typed with its
wire dataclasses: a publish of `null`, or with `data` that is not base64 of a `Payload`,
or a poll of `null`, raised inside them and failed every later workflow task of the run.
`register_handlers` replaces them (same names, so the library's clients still work) with
handlers that take whatever arrives and decode it here:

- publish signal: a malformed publish is dropped and counted (`RunStream.drop`);
  a well-formed one goes to `RunStream.accept`, which keeps only the in-flight call's own.
- poll Update: the validator refuses a malformed poll by name (`invalid_input`), and
  once the run has answered `poll_updates` polls by Update it refuses the rest
  (`poll_budget_spent`): followers then poll by query, which adds no history, so a run
  keeps Updates for steer, approve and cancel however long it streams and however many
  follow it (Temporal refuses any Update past 2,000 per run).
- poll query: a malformed poll fails the query only.

The library methods used (`_on_publish`, `_on_poll`, `_collect_batch`, `_validate_poll`,
`_on_offset`) and its handler names are private; `LIBRARY_HOOKS` lists them and
`tests/stream/test_stream_library_hooks.py` fails when a `temporalio` upgrade changes them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, cast

from pydantic import ValidationError
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.workflow_streams import (
    PollInput,
    PollResult,
    PublishEntry,
    PublishInput,
    WorkflowStream,
)
from temporalio.exceptions import ApplicationError

from contracts.errors import INVALID_INPUT, POLL_BUDGET_SPENT
from contracts.stream import POLL_NAME, PUBLISH_SIGNAL, DeltaEvent, streamed_bytes

LIBRARY_HOOKS = ("_on_publish", "_on_poll", "_collect_batch", "_validate_poll", "_on_offset")
"""The private `WorkflowStream` methods the run's stream calls."""
MAX_POLL_TOPICS = 16

__all__ = ["LIBRARY_HOOKS", "StreamPolls", "delta_of", "register_handlers", "streamed_bytes"]


class StreamPolls:
    """How many polls the run has answered by Update, against its budget."""

    def __init__(self, budget: int) -> None:
        """Answer at most `budget` polls by Update."""
        self.budget = budget
        self.answered = 0

    def answer(self) -> None:
        """Count one poll answered by Update."""
        self.answered += 1

    def check(self) -> None:
        """Refuse the next poll Update by name once the budget is spent."""
        if self.answered >= self.budget:
            raise ApplicationError(
                f"this run has answered its {self.budget} stream polls by Update (each one is history): "
                "poll by query, which adds none",
                type=POLL_BUDGET_SPENT,
                non_retryable=True,
            )


def register_handlers(
    stream: WorkflowStream,
    polls: StreamPolls,
    accept: Callable[[PublishInput], None],
    drop: Callable[[], None],
) -> None:
    """Replace the library's publish, poll and poll-query handlers with ones that survive any payload.

    A well-formed publish goes to `accept`, a malformed one to `drop`; polls by Update count in `polls`.
    """

    def publish(*args: Any) -> None:
        entry = publish_input(args)
        if entry is None:
            drop()
            return
        accept(entry)

    def validate_poll(*args: Any) -> None:
        polls.check()
        stream._validate_poll(_poll_or_refuse(args))  # pyright: ignore[reportPrivateUsage]

    async def poll(*args: Any) -> PollResult:
        request = _poll_or_refuse(args)
        polls.answer()
        return await stream._on_poll(request)  # pyright: ignore[reportPrivateUsage]

    def poll_query(*args: Any) -> PollResult:
        return stream._collect_batch(_poll_or_refuse(args))  # pyright: ignore[reportPrivateUsage]

    workflow.set_signal_handler(PUBLISH_SIGNAL, publish)  # pyright: ignore[reportUnknownMemberType]
    workflow.set_update_handler(POLL_NAME, poll, validator=validate_poll)  # pyright: ignore[reportUnknownMemberType]
    workflow.set_query_handler(POLL_NAME, poll_query)  # pyright: ignore[reportUnknownMemberType]


def publish_input(args: tuple[Any, ...]) -> PublishInput | None:
    """The publish the signal's arguments hold, every entry's data a `Payload`; None when malformed."""
    if len(args) != 1 or not isinstance(args[0], dict):
        return None
    raw = cast(dict[str, Any], args[0])
    items: object = raw.get("items", [])
    publisher_id: object = raw.get("publisher_id", "")
    sequence: object = raw.get("sequence", 0)
    if not isinstance(items, list) or not isinstance(publisher_id, str) or type(sequence) is not int:
        return None
    entries: list[PublishEntry] = []
    for item in cast(list[object], items):
        if not isinstance(item, dict):
            return None
        entry = cast(dict[str, Any], item)
        topic, data = entry.get("topic"), entry.get("data")
        if not isinstance(topic, str) or not isinstance(data, str) or payload_of(data) is None:
            return None
        entries.append(PublishEntry(topic=topic, data=data))
    return PublishInput(items=entries, publisher_id=publisher_id, sequence=sequence)


def payload_of(data: str) -> Payload | None:
    """The `Payload` an entry's `data` encodes (base64 of its protobuf), or None."""
    try:
        return Payload.FromString(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None
    except Exception:  # protobuf's DecodeError is not a ValueError
        return None


def delta_of(entry: PublishEntry) -> DeltaEvent | None:
    """The entry's `DeltaEvent`, or None (not a delta, or not decodable)."""
    payload = payload_of(entry.data)
    if payload is None:
        return None
    try:
        delta = workflow.payload_converter().from_payload(payload, DeltaEvent)
    except (ValueError, ValidationError, TypeError):
        return None
    except Exception:  # a converter's own error for an unknown encoding
        return None
    return delta if isinstance(delta, DeltaEvent) else None  # pyright: ignore[reportUnnecessaryIsInstance]


def poll_input(args: tuple[Any, ...]) -> PollInput | None:
    """The poll the arguments hold (`{"topics": [...], "from_offset": n}`), or None when malformed."""
    if len(args) != 1 or not isinstance(args[0], dict):
        return None
    raw = cast(dict[str, Any], args[0])
    topics: object = raw.get("topics", [])
    offset: object = raw.get("from_offset", 0)
    if not isinstance(topics, list) or len(cast(list[object], topics)) > MAX_POLL_TOPICS:
        return None
    names = cast(list[object], topics)
    if not all(isinstance(name, str) for name in names) or type(offset) is not int or offset < 0:
        return None
    return PollInput(topics=[str(name) for name in names], from_offset=offset)


def _poll_or_refuse(args: tuple[Any, ...]) -> PollInput:
    request = poll_input(args)
    if request is None:
        raise ApplicationError(
            'a stream poll takes one object {"topics": [str, ...], "from_offset": int >= 0}',
            type=INVALID_INPUT,
            non_retryable=True,
        )
    return request
