"""When a schedule fires: cron, interval or calendars, checked before anything is created.

`schedule_spec(...)` is the one rule: a cron expression, an interval (`every_s`) or calendars
(exactly one of them), a time zone, jitter, start and end. Each is checked here, so a bad one
is refused by name (`invalid_input`, naming the field) and nothing is created:

- `cron`: five fields (minute, hour, day of month, month, day of week: numbers, `*`, ranges
  `a-b`, steps `/n`, lists `a,b`, month and day names) or one of `@yearly`, `@annually`,
  `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`. Temporal reads the same string.
- `every_s`: a whole number of seconds.
- `calendars`: `CalendarSpec`s (each field a list of values; unset fields as Temporal's defaults).
- `timezone`: an IANA name the machine's time zone database knows (`Europe/Paris`).

The smallest interval is the deployment's `REACT_SCHEDULE_MIN_INTERVAL_S` (default 60 s): an
`every_s` below it, or a cron expression or calendar that can fire twice within it (the
shortest gap between two matching times of a day, the day's wrap included), is refused.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from temporalio.client import ScheduleCalendarSpec, ScheduleIntervalSpec, ScheduleRange, ScheduleSpec

from clients.errors import RejectedError
from contracts.errors import INVALID_INPUT
from contracts.schedules import CalendarSpec
from contracts.whole_numbers import whole_number

MIN_INTERVAL_VARIABLE: Final = "REACT_SCHEDULE_MIN_INTERVAL_S"
DEFAULT_MIN_INTERVAL_S: Final = 60
MAX_BACKFILL_VARIABLE: Final = "REACT_SCHEDULE_MAX_BACKFILL"
DEFAULT_MAX_BACKFILL: Final = 100
BACKFILL_CEILING: Final = 999
"""The highest `REACT_SCHEDULE_MAX_BACKFILL`: Temporal lists at most 1,000 matching times at once."""
MAX_CRON_CHARS: Final = 200
MAX_CALENDARS: Final = 16
DAY_S: Final = 86_400

_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
# (name, lowest, highest, names)
_NO_NAMES: Final[dict[str, int]] = {}
_FIELDS: Final[tuple[tuple[str, int, int, Mapping[str, int]], ...]] = (
    ("minute", 0, 59, _NO_NAMES),
    ("hour", 0, 23, _NO_NAMES),
    ("day of month", 1, 31, _NO_NAMES),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
_ITEM = re.compile(r"^(?P<range>\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(?P<step>[0-9]+))?$")


def schedule_setting(
    name: str,
    default: int,
    env: Mapping[str, str] | None = None,
    *,
    ceiling: int | None = None,
    unit: str = "",
) -> int:
    """The whole-number schedule setting `name` of `env` (default `os.environ`), `default` when unset.

    Raises:
        RejectedError: `invalid_input` naming the variable when it is not a whole number from 1 (to
            `ceiling`).
    """
    raw = (env if env is not None else os.environ).get(name, "").strip()
    if not raw:
        return default
    number = whole_number(raw)
    if number is None or number < 1 or (ceiling is not None and number > ceiling):
        bound = f"from 1 to {ceiling}" if ceiling is not None else "≥ 1"
        raise RejectedError(INVALID_INPUT, f"{name} must be a whole number{unit} {bound}")
    return number


def min_interval_s(env: Mapping[str, str] | None = None) -> int:
    """The deployment's smallest interval between two firings (`REACT_SCHEDULE_MIN_INTERVAL_S`).

    Raises:
        RejectedError: `invalid_input` when the variable is not a whole number ≥ 1.
    """
    return schedule_setting(MIN_INTERVAL_VARIABLE, DEFAULT_MIN_INTERVAL_S, env, unit=" of seconds")


def max_backfill(env: Mapping[str, str] | None = None) -> int:
    """The most firings one backfill may make (`REACT_SCHEDULE_MAX_BACKFILL`, default 100).

    Raises:
        RejectedError: `invalid_input` when the variable is not a whole number from 1 to `BACKFILL_CEILING`.
    """
    return schedule_setting(MAX_BACKFILL_VARIABLE, DEFAULT_MAX_BACKFILL, env, ceiling=BACKFILL_CEILING)


def _refuse(field: str, problem: str) -> RejectedError:
    return RejectedError(INVALID_INPUT, f"{field}: {problem}")


def _value(token: str, low: int, high: int, names: Mapping[str, int], field: str) -> int:
    number = whole_number(token)
    if number is None:
        number = names.get(token)
    if number is None or not low <= number <= high:
        raise _refuse("cron", f"{token!r} is not a {field} ({low}-{high})")
    return number


def _cron_field(text: str, low: int, high: int, names: Mapping[str, int], field: str) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM.fullmatch(item)
        if match is None:
            raise _refuse("cron", f"{item!r} is not a {field} item (numbers, *, a-b, /n, lists)")
        span, step = match["range"], int(match["step"] or 1)
        if step < 1:
            raise _refuse("cron", f"a step must be ≥ 1 in {item!r}")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            start, end = span.split("-")
            first, last = _value(start, low, high, names, field), _value(end, low, high, names, field)
            if first > last:
                raise _refuse("cron", f"the range {span!r} runs backwards")
        else:
            first = _value(span, low, high, names, field)
            last = high if match["step"] else first
        values.update(range(first, last + 1, step))
    return values


def cron_times_of_day(cron: str) -> list[int]:
    """The seconds of a day a five-field cron expression (or an `@` alias) can fire at.

    Raises:
        RejectedError: `invalid_input` naming `cron` and what is wrong.
    """
    text = cron.strip().lower()
    if not text or len(text) > MAX_CRON_CHARS:
        raise _refuse("cron", f"a cron expression has 1 to {MAX_CRON_CHARS} characters")
    text = _ALIASES.get(text, text)
    if text.startswith("@"):
        raise _refuse("cron", f"unknown alias {cron.strip()!r} (one of {', '.join(_ALIASES)})")
    fields = text.split()
    if len(fields) != len(_FIELDS):
        raise _refuse("cron", f"five fields (minute hour day-of-month month day-of-week), not {len(fields)}")
    sets = [
        _cron_field(f, low, high, names, name)
        for f, (name, low, high, names) in zip(fields, _FIELDS, strict=True)
    ]
    minutes, hours = sets[0], sets[1]
    return sorted(h * 3600 + m * 60 for h in hours for m in minutes)


def _calendar_times_of_day(calendar: CalendarSpec, index: int) -> list[int]:
    bounds = {"second": (0, 59), "minute": (0, 59), "hour": (0, 23)}
    for name, (low, high) in bounds.items():
        values: list[int] = getattr(calendar, name)
        if not values or any(not low <= v <= high for v in values):
            raise _refuse(f"calendars[{index}].{name}", f"one or more values, each {low}-{high}")
    for name, low, high in (("day_of_month", 1, 31), ("month", 1, 12), ("day_of_week", 0, 6)):
        given: list[int] | None = getattr(calendar, name)
        if given is not None and (not given or any(not low <= v <= high for v in given)):
            raise _refuse(f"calendars[{index}].{name}", f"one or more values, each {low}-{high}")
    return sorted(
        h * 3600 + m * 60 + s
        for h in set(calendar.hour)
        for m in set(calendar.minute)
        for s in set(calendar.second)
    )


def shortest_gap_s(times_of_day: Sequence[int]) -> int:
    """The shortest time between firings at these seconds of a day (any day matching, the wrap counted)."""
    times = sorted(set(times_of_day))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gaps.append(times[0] + DAY_S - times[-1])
    return min(gaps)


def _ranges(values: Sequence[int]) -> list[ScheduleRange]:
    return [ScheduleRange(v) for v in sorted(set(values))]


def _temporal_calendar(calendar: CalendarSpec) -> ScheduleCalendarSpec:
    defaults = ScheduleCalendarSpec()
    return ScheduleCalendarSpec(
        second=_ranges(calendar.second),
        minute=_ranges(calendar.minute),
        hour=_ranges(calendar.hour),
        day_of_month=_ranges(calendar.day_of_month) if calendar.day_of_month else defaults.day_of_month,
        month=_ranges(calendar.month) if calendar.month else defaults.month,
        day_of_week=_ranges(calendar.day_of_week) if calendar.day_of_week else defaults.day_of_week,
    )


def check_timezone(timezone: str | None) -> str | None:
    """`timezone` if the time zone database knows it (None: UTC).

    Raises:
        RejectedError: `invalid_input` naming `timezone`.
    """
    if timezone is None:
        return None
    try:
        if not timezone or timezone != timezone.strip() or ".." in timezone or timezone.startswith("/"):
            raise ValueError(timezone)
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise _refuse("timezone", f"{timezone!r} is not an IANA time zone (e.g. Europe/Paris)") from None
    return timezone


def schedule_spec(
    *,
    cron: str | None = None,
    every_s: int | None = None,
    calendars: Sequence[CalendarSpec] = (),
    timezone: str | None = None,
    jitter_s: int | None = None,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    min_interval: int | None = None,
) -> ScheduleSpec:
    """Temporal's `ScheduleSpec` of a schedule's times, every part checked (the module's docstring).

    Raises:
        RejectedError: `invalid_input` naming the field (`cron`, `every_s`, `calendars`,
            `timezone`, `jitter_s`, `start_at`, `end_at`).
    """
    floor = min_interval if min_interval is not None else min_interval_s()
    given = [cron is not None, every_s is not None, bool(calendars)]
    if sum(given) != 1:
        raise _refuse("cron", "give exactly one of cron, every_s and calendars")
    spec = ScheduleSpec(time_zone_name=check_timezone(timezone))
    if cron is not None:
        gap = shortest_gap_s(cron_times_of_day(cron))
        if gap < floor:
            raise _refuse("cron", f"it can fire {gap} s apart; the smallest interval is {floor} s")
        spec.cron_expressions = [cron.strip()]
    elif every_s is not None:
        if isinstance(every_s, bool) or every_s < floor or every_s > 366 * DAY_S:
            raise _refuse(
                "every_s", f"a whole number of seconds from {floor} (the smallest interval) to a year"
            )
        spec.intervals = [ScheduleIntervalSpec(every=timedelta(seconds=every_s))]
    else:
        if len(calendars) > MAX_CALENDARS:
            raise _refuse("calendars", f"at most {MAX_CALENDARS}")
        times = [t for i, c in enumerate(calendars) for t in _calendar_times_of_day(c, i)]
        gap = shortest_gap_s(times)
        if gap < floor:
            raise _refuse("calendars", f"they can fire {gap} s apart; the smallest interval is {floor} s")
        spec.calendars = [_temporal_calendar(c) for c in calendars]
    if jitter_s is not None:
        if isinstance(jitter_s, bool) or not 0 <= jitter_s <= DAY_S:
            raise _refuse("jitter_s", f"a whole number of seconds from 0 to {DAY_S}")
        spec.jitter = timedelta(seconds=jitter_s)
    for name, moment in (("start_at", start_at), ("end_at", end_at)):
        if moment is not None and moment.tzinfo is None:
            raise _refuse(name, "a time with its UTC offset (e.g. 2030-01-01T07:00:00+00:00)")
    if start_at is not None and end_at is not None and end_at <= start_at:
        raise _refuse("end_at", "must be after start_at")
    spec.start_at, spec.end_at = start_at, end_at
    return spec
