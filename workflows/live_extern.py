"""Handing a run's accepted live items to the worker's live channel, with no command and no state.

When the worker has a live channel (`REACT_LIVE_URL`; `hosting.live_sink.LiveSinkInterceptor`
installs it as one of the worker's extern functions), every item the run's stream accepts (a
trace item as it is recorded, a delta batch the run keeps) is also handed to it, as the run's
own log holds it, in the same order. Like workflow logging it is skipped while replaying, so a
worker that replays a run (after a restart, or with no cache) sends nothing again; an item of a
workflow task that failed and ran again may be sent twice, and followers drop what they have
(trace items by seq, deltas by call, attempt and seq). Nothing here changes the workflow's
commands or state: without the extern, or with it, the run does exactly the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from temporalio import workflow

from contracts.run import TERMINAL_KINDS
from contracts.stream import DeltaEvent, TraceItem

LIVE_EXTERN = "durable_react_live_sink"
"""The extern function (a worker's) taking a workflow id, one item's JSON, and whether it ends the run."""

LiveSink = Callable[[str, bytes, bool], None]


def emit(item: DeltaEvent | TraceItem) -> None:
    """Hand `item` to the worker's live channel, if it has one (never while replaying)."""
    if workflow.unsafe.is_replaying():
        return
    externs = cast(Mapping[str, Any], workflow.extern_functions())  # pyright: ignore[reportUnknownMemberType]
    sink = cast(LiveSink | None, externs.get(LIVE_EXTERN))
    if sink is not None:
        ends = isinstance(item, TraceItem) and item.event.kind in TERMINAL_KINDS
        sink(workflow.info().workflow_id, item.model_dump_json().encode(), ends)
