"""Who a caller is: a `Principal` (its name owns the sessions it creates) and what a name may be.

The lowest module of identity: the settings, the guard, the owners' ids and every route use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.ids import PRINCIPAL_PATTERN
from gateway.identity.scopes import ALL_SCOPES, STATIC_DEFAULT

__all__ = ["LOCAL", "PRINCIPAL_PATTERN", "Principal"]


@dataclass(frozen=True)
class Principal:
    """A caller; its `name` (matching `PRINCIPAL_PATTERN`) owns the sessions it creates."""

    name: str
    scopes: frozenset[str] = STATIC_DEFAULT
    """What it may do (`gateway.identity.scopes`)."""


LOCAL = Principal("local", frozenset(ALL_SCOPES))
