"""`REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL`: how many requests a principal may have running at once.

The gateway reads it for asks over HTTP and the worker for a schedule's firings: one reader, so
both refuse the same values the same way (`SettingsError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from contracts.admission import MAX_ADMISSION_SLOTS
from settings.env_values import whole

__all__ = ["MAX_ACTIVE_ENV", "max_active_of"]

MAX_ACTIVE_ENV: Final = "REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL"


def max_active_of(env: Mapping[str, str]) -> int | None:
    """The limit of `env` (None: unset, no limit).

    Raises:
        SettingsError: not a whole number from 1 to `MAX_ADMISSION_SLOTS`, naming the setting.
    """
    return whole(env, MAX_ACTIVE_ENV, 1, MAX_ADMISSION_SLOTS)
