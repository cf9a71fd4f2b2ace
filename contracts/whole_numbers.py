"""Reading a whole number from text: ASCII digits only.

`str.isdigit` is true of superscripts and of other scripts' digits, which `int` then refuses
(a superscript two raises) or reads (an Arabic-Indic one is 1). Every reader of a number a person
or a peer wrote (a port, a setting, a count, a header) uses `whole_number`, so such text is
refused by name instead of raising deep inside.
"""

from __future__ import annotations


def whole_number(text: str) -> int | None:
    """The number `text` spells in the digits 0-9 (no sign, no spaces), or None."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def port_number(text: str) -> int | None:
    """The TCP port `text` spells (1-65535, ASCII digits), or None."""
    port = whole_number(text)
    return port if port is not None and 0 < port < 65_536 else None
