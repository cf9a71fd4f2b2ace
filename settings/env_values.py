"""Reading one environment variable: its value, a true/false flag, and the one error of every setting."""

from __future__ import annotations

import re
from collections.abc import Mapping

from contracts.whole_numbers import whole_number

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}


class SettingsError(ValueError):
    """A deployment setting that cannot be used; the message is one line naming the variable.

    The one error of every setting the product reads (the worker's, the gateway's, identity's,
    the live channel's...): the entry points catch it, print the line and exit.
    """

    def __init__(self, variable: str, problem: str, *, sentence: bool = False) -> None:
        """Create the error for `variable`: `<variable>: <problem>`, or `problem` alone if `sentence`.

        A `sentence` names the variable itself (`REACT_X must be a number`).
        """
        super().__init__(problem if sentence else f"{variable}: {problem}")
        self.variable = variable


def value(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value with surrounding blanks removed; unset or blank is None."""
    raw = env.get(name)
    return raw.strip() or None if raw is not None else None


def flag(env: Mapping[str, str], name: str) -> bool | None:
    """The variable as true or false (`1/true/yes/on`, `0/false/no/off`); unset or blank is None.

    Raises:
        SettingsError: any other value.
    """
    text = value(env, name)
    if text is None:
        return None
    if text.lower() in TRUE_WORDS:
        return True
    if text.lower() in FALSE_WORDS:
        return False
    raise SettingsError(name, f"expected true or false, got {text!r}")


SIZE = re.compile(r"(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?", re.IGNORECASE)
"""A size in bytes: a whole number, optionally with a unit (`k`, `KiB`, `MB`, `g`, ...: powers of 1024)."""


def size(env: Mapping[str, str], name: str, example: str) -> int | None:
    """The variable as a size in bytes (`20971520`, `20MiB`, `128k`); unset or blank is None.

    Raises:
        SettingsError: a value that is not a size (`example` shows one).
    """
    text = value(env, name)
    if text is None:
        return None
    match = SIZE.fullmatch(text)
    if match is None:
        raise SettingsError(name, f"expected a size in bytes such as {example}, got {text!r}")
    unit = (match.group(2) or "b").lower()
    return int(match.group(1)) * {"g": 1024**3, "m": 1024**2, "k": 1024}.get(unit[0], 1)


def whole(env: Mapping[str, str], name: str, low: int, high: int | None = None) -> int | None:
    """The variable as a whole number from `low` to `high` (no ceiling when None); unset or blank is None.

    Raises:
        SettingsError: anything else, naming the variable and the range.
    """
    text = value(env, name)
    if text is None:
        return None
    number = whole_number(text)
    if number is None or number < low or (high is not None and number > high):
        bounds = f"from {low:,} to {high:,}" if high is not None else f"of at least {low:,}"
        raise SettingsError(name, f"{name} must be a whole number {bounds}, got {text!r}", sentence=True)
    return number
