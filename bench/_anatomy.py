"""What a run's history is made of: bytes per event type, and per top-level field of its JSON payloads."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History


def bytes_by_event_type(history: History) -> Counter[str]:
    """Serialized bytes of each event type, summed over the history."""
    sizes: Counter[str] = Counter()
    for event in history.events:
        sizes[EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")] += event.ByteSize()
    return sizes


def _add_payload(sizes: Counter[str], where: str, payload: Payload) -> None:
    try:
        value: Any = json.loads(payload.data)
    except (UnicodeDecodeError, ValueError):
        sizes[f"{where} (not JSON)"] += len(payload.data)
        return
    if not isinstance(value, dict):
        sizes[where] += len(payload.data)
        return
    fields: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    for key, item in fields.items():
        sizes[f"{where} .{key}"] += len(json.dumps(item, separators=(",", ":")))


def bytes_by_payload_field(history: History) -> Counter[str]:
    """JSON bytes of each top-level payload field, by where it travels (workflow input, activity input...)."""
    sizes: Counter[str] = Counter()
    activity_of: dict[int, str] = {}
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            for payload in event.workflow_execution_started_event_attributes.input.payloads:
                _add_payload(sizes, "workflow input", payload)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            for payload in event.workflow_execution_completed_event_attributes.result.payloads:
                _add_payload(sizes, "workflow result", payload)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            activity_of[event.event_id] = attributes.activity_type.name
            for payload in attributes.input.payloads:
                _add_payload(sizes, f"{attributes.activity_type.name} input", payload)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            name = activity_of.get(attributes.scheduled_event_id, "activity")
            for payload in attributes.result.payloads:
                _add_payload(sizes, f"{name} result", payload)
    return sizes


def anatomy_table(histories: dict[str, History], top: int = 8) -> str:
    """Markdown tables: bytes per event type for each history, then the largest payload fields."""
    keys = list(histories)
    by_type = {key: bytes_by_event_type(h) for key, h in histories.items()}
    types = sorted(
        {t for sizes in by_type.values() for t in sizes}, key=lambda t: -max(s[t] for s in by_type.values())
    )
    lines = [
        "| event type | " + " | ".join(f"{k} bytes" for k in keys) + " |",
        "|---" + "|---:" * len(keys) + "|",
    ]
    lines += [f"| {t} | " + " | ".join(f"{by_type[k][t]:,}" for k in keys) + " |" for t in types]
    lines += ["", "| payload field (JSON bytes, summed over the run) | " + " | ".join(keys) + " |"]
    lines.append("|---" + "|---:" * len(keys) + "|")
    fields = {key: bytes_by_payload_field(h) for key, h in histories.items()}
    # Each history's own largest fields, so one scenario's big payloads do not hide another's.
    largest = {f for sizes in fields.values() for f, _ in sizes.most_common(top)}
    ordered = sorted(largest, key=lambda f: -max(s[f] for s in fields.values()))
    lines += [f"| {f} | " + " | ".join(f"{fields[k][f]:,}" for k in keys) + " |" for f in ordered]
    return "\n".join(lines)
