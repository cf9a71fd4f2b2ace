"""What a caller may do: the seven scopes, what each route needs (one table), and `require`.

A token's scopes come from its `scope` claim (space-separated) or `scp` (a list of strings); a
static token has the scopes its setting names (`token=principal:agents:ask+agents:approve`), else
`STATIC_DEFAULT` (all but `agents:admin` and `agents:manage`). A missing scope is 403 `forbidden` naming it.

The guard decides every request's scope from one table (`gateway.guard.operations`), reading
the POST bodies of AG-UI, the AI SDK, background requests, A2A and MCP for the operation inside
(a `HEAD` needs what its `GET` needs); where the thing is done, `require`
runs again: an MCP tool its `MCP_TOOL_SCOPES` (`gateway.mcp.server`), every approval, whichever
protocol carries it, `agents:approve` (`gateway.core.RequestCore.controls.approve`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Protocol

from contracts.errors import FORBIDDEN
from gateway.errors import GatewayError

__all__ = [
    "ADMIN",
    "ALL_SCOPES",
    "APPROVE",
    "ASK",
    "MANAGE",
    "MCP_TOOL_SCOPES",
    "MEMORY_READ",
    "MEMORY_WRITE",
    "SCHEDULES",
    "STATIC_DEFAULT",
    "ScopeRefusal",
    "Scoped",
    "parse_scope_list",
    "require",
    "scopes_of_claims",
]

ASK: Final = "agents:ask"
"""Ask, steer, cancel, fork, reset, erase (`DELETE`), and read one's own threads."""
APPROVE: Final = "agents:approve"
"""Approve or deny tool calls awaiting approval."""
SCHEDULES: Final = "agents:schedules"
"""Create, change and delete schedules."""
ADMIN: Final = "agents:admin"
"""Read every principal's threads."""
MEMORY_READ: Final = "memory:read"
"""List, search and read one's own memory items (`/api/memory`)."""
MEMORY_WRITE: Final = "memory:write"
"""Put and delete one's own memory items."""
MANAGE: Final = "agents:manage"
"""Make agents at run time, publish their versions and move their `latest` (`/api/agents`)."""
ALL_SCOPES: Final = (ASK, APPROVE, SCHEDULES, ADMIN, MEMORY_READ, MEMORY_WRITE, MANAGE)
STATIC_DEFAULT: Final = frozenset({ASK, APPROVE, SCHEDULES, MEMORY_READ, MEMORY_WRITE})
"""A static token's scopes when its setting names none."""
MAX_SCOPES_CHARS = 4096
"""A longer `scope` claim is not read (its token is refused by its size bound anyway)."""

MCP_TOOL_SCOPES: Final[Mapping[str, str]] = {
    "ask": ASK,
    "status": ASK,
    "steer": ASK,
    "cancel": ASK,
    "history": ASK,
    "fork": ASK,
    "delete_thread": ASK,
    "approve": APPROVE,
    "memory_search": MEMORY_READ,
    "memory_get": MEMORY_READ,
    "memory_put": MEMORY_WRITE,
    "memory_delete": MEMORY_WRITE,
}
"""The scope each MCP tool needs (checked when it is called: `require`)."""


class ScopeRefusal(GatewayError):
    """403 `forbidden`: the caller's token lacks `scope`."""

    def __init__(self, scope: str) -> None:
        """The refusal of a call that needs `scope`."""
        super().__init__(403, FORBIDDEN, f"this needs the scope {scope!r}, which the token does not have")
        self.scope = scope


class Scoped(Protocol):
    """A caller with scopes (`gateway.identity.principal.Principal`)."""

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes its token grants."""
        ...


def require(principal: Scoped, scope: str) -> None:
    """Refuse unless `principal` has `scope`.

    Raises:
        ScopeRefusal: 403 `forbidden` naming `scope`.
    """
    if scope not in principal.scopes:
        raise ScopeRefusal(scope)


def parse_scope_list(text: str, *, separator: str = " ") -> frozenset[str]:
    """The scopes of `text` split on `separator` (blank parts dropped)."""
    return frozenset(part for part in (p.strip() for p in text.split(separator)) if part)


def scopes_of_claims(claims: Mapping[str, object]) -> frozenset[str]:
    """A token's scopes: `scope` (a space-separated string) and `scp` (a list, or a string), together."""
    found: set[str] = set()
    scope = claims.get("scope")
    if isinstance(scope, str) and len(scope) <= MAX_SCOPES_CHARS:
        found |= parse_scope_list(scope)
    scp = claims.get("scp")
    if isinstance(scp, str) and len(scp) <= MAX_SCOPES_CHARS:
        found |= parse_scope_list(scp)
    elif isinstance(scp, list):
        found |= _strings(scp)  # pyright: ignore[reportUnknownArgumentType]
    return frozenset(found)


def _strings(values: Iterable[object]) -> set[str]:
    return {value for value in values if isinstance(value, str) and value}
