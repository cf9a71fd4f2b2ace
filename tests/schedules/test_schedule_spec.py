"""A schedule's times are checked before anything is created: `clients.schedule_spec`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from clients.errors import RejectedError
from clients.schedule_spec import cron_times_of_day, min_interval_s, schedule_spec, shortest_gap_s
from contracts.schedules import CalendarSpec


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * *"}, "cron"),
        ({"cron": "@sometimes"}, "cron"),
        ({"cron": "*/0 * * * *"}, "cron"),
        ({"cron": "5-1 * * * *"}, "cron"),
        ({"cron": "0 0 * foo *"}, "cron"),
        ({"cron": ""}, "cron"),
        ({"cron": "0 * * * *", "every_s": 60}, "cron"),
        ({}, "cron"),
        ({"every_s": 59}, "every_s"),
        ({"every_s": 0}, "every_s"),
        ({"every_s": True}, "every_s"),
        ({"cron": "* * * * *", "min_interval": 120}, "cron"),
        ({"cron": "0,1 * * * *", "min_interval": 90}, "cron"),
        (
            {"calendars": [CalendarSpec(second=[0, 30], minute=list(range(60)), hour=list(range(24)))]},
            "calendars",
        ),
        ({"calendars": [CalendarSpec(hour=[24])]}, "calendars[0].hour"),
        ({"cron": "@hourly", "timezone": "Mars/Olympus"}, "timezone"),
        ({"cron": "@hourly", "timezone": "../etc/passwd"}, "timezone"),
        ({"cron": "@hourly", "timezone": ""}, "timezone"),
        ({"cron": "@hourly", "jitter_s": -1}, "jitter_s"),
        ({"cron": "@hourly", "start_at": datetime(2030, 1, 1)}, "start_at"),
        (
            {
                "cron": "@hourly",
                "start_at": datetime(2030, 1, 2, tzinfo=UTC),
                "end_at": datetime(2030, 1, 1, tzinfo=UTC),
            },
            "end_at",
        ),
    ],
)
def test_bad_times_are_refused_by_name(kwargs: dict[str, object], field: str) -> None:
    kwargs.setdefault("min_interval", 60)
    with pytest.raises(RejectedError) as refused:
        schedule_spec(**kwargs)  # pyright: ignore[reportArgumentType]
    assert refused.value.code == "invalid_input"
    assert refused.value.message.startswith(f"{field}:"), refused.value.message


def test_good_times_become_temporal_specs() -> None:
    spec = schedule_spec(cron="0 7 * * mon-fri", timezone="Europe/Paris", jitter_s=30, min_interval=60)
    assert (spec.cron_expressions, spec.time_zone_name, spec.jitter) == (
        ["0 7 * * mon-fri"],
        "Europe/Paris",
        timedelta(seconds=30),
    )
    assert schedule_spec(every_s=2, min_interval=1).intervals[0].every == timedelta(seconds=2)
    calendar = schedule_spec(calendars=[CalendarSpec(hour=[7, 19], day_of_week=[1])], min_interval=60)
    assert [r.start for r in calendar.calendars[0].hour] == [7, 19]
    assert schedule_spec(cron="@hourly", min_interval=3600).cron_expressions == ["@hourly"]


def test_the_shortest_gap_counts_the_day_wrap() -> None:
    assert shortest_gap_s(cron_times_of_day("*/15 * * * *")) == 900
    assert shortest_gap_s(cron_times_of_day("0 0,23 * * *")) == 3600
    assert shortest_gap_s(cron_times_of_day("@daily")) == 86_400
    assert shortest_gap_s(cron_times_of_day("5,55 * * * *")) == 600  # 55 -> next hour's 5


def test_the_floor_is_a_deployment_setting() -> None:
    assert min_interval_s({}) == 60
    assert min_interval_s({"REACT_SCHEDULE_MIN_INTERVAL_S": "1"}) == 1
    with pytest.raises(RejectedError, match="REACT_SCHEDULE_MIN_INTERVAL_S"):
        min_interval_s({"REACT_SCHEDULE_MIN_INTERVAL_S": "soon"})
    for junk in ("\u00b2", "\u0663"):  # other scripts' digits: refused by name, not raised from `int`
        with pytest.raises(RejectedError, match="REACT_SCHEDULE_MIN_INTERVAL_S"):
            min_interval_s({"REACT_SCHEDULE_MIN_INTERVAL_S": junk})
