"""Who is calling: a bearer token's principal, or `local` when the gateway has no tokens."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.errors import GatewayError
from gateway.settings import GatewaySettings

__all__ = ["LOCAL", "Principal", "authenticate"]


@dataclass(frozen=True)
class Principal:
    """A caller; its `name` (matching `settings.PRINCIPAL_PATTERN`) owns the sessions it creates."""

    name: str


LOCAL = Principal("local")


def authenticate(headers: Mapping[str, str], settings: GatewaySettings) -> Principal:
    """The principal of `authorization: Bearer <token>` (every request is `local` without tokens).

    Raises:
        GatewayError: 401 `unauthorized` when tokens are configured and none of them is given.
    """
    if not settings.tokens:
        return LOCAL
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise GatewayError.unauthorized()
    # Compare against every token in constant time: the answer's timing says nothing about them.
    found: str | None = None
    for known, principal in settings.tokens.items():
        if hmac.compare_digest(known.encode(), token.encode()):
            found = principal
    if found is None:
        raise GatewayError.unauthorized()
    return Principal(found)
