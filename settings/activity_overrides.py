"""Deployment overrides of activity options, as `REACT_ACTIVITY_OPTIONS` writes them: JSON.

    {"llm_call": {"start_to_close_timeout_s": 300, "maximum_attempts": 8},
     "run_tool": {"heartbeat_timeout_s": 10}}

Each key names an activity of `contracts.activities.ACTIVITIES`, each value the fields of an
`ActivityOverride`. The worker's plugin installs them (`hosting.plugin.DurableReactPlugin`).
"""

from __future__ import annotations

import json
from typing import cast

from pydantic import ValidationError

from contracts.activities import ACTIVITIES, ActivityOverride

EXAMPLE = '{"llm_call": {"start_to_close_timeout_s": 300}}'


def parse_activity_overrides(text: str) -> dict[str, ActivityOverride]:
    """The overrides `text` (JSON) describes, by activity name.

    Raises:
        ValueError: one line naming what is wrong (not JSON, not an object, an unknown activity,
            a field out of range).
    """
    try:
        raw: object = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"is not JSON ({error.msg}); expected e.g. {EXAMPLE}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object of activity name -> options, e.g. {EXAMPLE}")
    entries = cast(dict[str, object], raw)
    if unknown := ", ".join(sorted(set(entries) - set(ACTIVITIES))):
        raise ValueError(f"unknown activity {unknown}; activities: {', '.join(ACTIVITIES)}")
    overrides: dict[str, ActivityOverride] = {}
    for activity, options in entries.items():
        try:
            overrides[activity] = ActivityOverride.model_validate(options)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in error.errors()
            )
            raise ValueError(f"{activity}: {problems}") from None
    return overrides
