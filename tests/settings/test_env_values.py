"""One reader per kind of setting value: a whole number in a range, refused by name."""

from __future__ import annotations

import pytest

from contracts.admission import MAX_ADMISSION_SLOTS
from contracts.whole_numbers import port_number, whole_number
from live.dev_channel import loopback_port
from settings.admission import MAX_ACTIVE_ENV, max_active_of
from settings.env_values import SettingsError, whole


def test_a_whole_number_in_its_range_is_read_and_unset_or_blank_is_none() -> None:
    assert whole({"N": " 7 "}, "N", 1, 10) == 7
    assert whole({"N": "12345678"}, "N", 1) == 12_345_678
    assert whole({}, "N", 1, 10) is None
    assert whole({"N": "  "}, "N", 1, 10) is None


@pytest.mark.parametrize("raw", ["0", "11", "-3", "2.5", "ten", "1e3", "٣", "²", "+5"])
def test_anything_else_is_refused_naming_the_variable_and_the_range(raw: str) -> None:
    with pytest.raises(SettingsError, match=r"^N must be a whole number from 1 to 10, got ") as refused:
        whole({"N": raw}, "N", 1, 10)
    assert refused.value.variable == "N"


def test_the_active_request_limit_is_one_rule_for_the_gateway_and_the_worker() -> None:
    assert max_active_of({MAX_ACTIVE_ENV: "3"}) == 3
    assert max_active_of({}) is None
    for bad in ("0", str(MAX_ADMISSION_SLOTS + 1), "lots"):
        with pytest.raises(SettingsError, match=MAX_ACTIVE_ENV):
            max_active_of({MAX_ACTIVE_ENV: bad})


def test_a_whole_number_is_ascii_digits_only_wherever_one_is_read() -> None:
    assert [whole_number(t) for t in ("0", "8080", "007")] == [0, 8080, 7]
    for junk in ("", " 1", "-1", "+1", "1.0", "\u00b2", "\u0663", "\uff11\uff12", "1_000"):
        assert whole_number(junk) is None, junk
    assert [port_number(t) for t in ("1", "65535", "0", "65536", "8\u00b2")] == [1, 65535, None, None, None]
    assert loopback_port("127.0.0.1:7233") == 7233
    assert loopback_port("127.0.0.1:72\u00b33") is None
