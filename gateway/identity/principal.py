"""Who a caller is: a `Principal` (its name owns the sessions it creates) and what a name may be.

The lowest module of identity: the settings, the guard, the owners' ids and every route use it.

Two kinds of names, which never meet: a static token's principal is the name its setting gives
(`REACT_GATEWAY_TOKENS`), and may not start with `PROVIDER_PREFIX`; an OpenID provider's user
is `provider_principal(issuer, claim value)`, which always does: `oidc.<issuer tag>.<value>`
(the tag: 6 hex digits of the issuer's SHA-256), or, for a value that does not fit the principal
rule in what is left of 32 characters (a UUID, an e-mail address), `oidc.<issuer tag>-<digest>`
(hex digits of the SHA-256 of issuer and value). So `sub: alice` is not static `alice`, and two
issuers' `alice`s are two principals. A provider's user is mapped onto a static principal only on
purpose (`REACT_GATEWAY_OIDC_PRINCIPAL_MAP`, `gateway.identity.settings`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from contracts.ids import PRINCIPAL_PATTERN
from gateway.identity.scopes import ALL_SCOPES, STATIC_DEFAULT

__all__ = [
    "LOCAL",
    "MAX_CLAIM_CHARS",
    "PRINCIPAL_PATTERN",
    "PROVIDER_PREFIX",
    "Principal",
    "is_static_name",
    "provider_principal",
    "static_name_problem",
]

MAX_PRINCIPAL_CHARS = 32
PROVIDER_PREFIX = "oidc."
"""How every name of a provider's user starts (and no static principal's)."""
MAX_CLAIM_CHARS = 255
"""The longest principal claim a provider's token may carry."""
_ISSUER_TAG_CHARS = 6


def is_static_name(name: str) -> bool:
    """Whether `name` may be a static token's principal (the rule, and not a provider's name)."""
    return PRINCIPAL_PATTERN.fullmatch(name) is not None and not name.startswith(PROVIDER_PREFIX)


def static_name_problem(name: str) -> str | None:
    """Why `name` may not be a static principal (None: it may), as every setting that names one says."""
    if is_static_name(name):
        return None
    return (
        f"principal {name!r} must match {PRINCIPAL_PATTERN.pattern} "
        f"and not start with {PROVIDER_PREFIX!r} (the OpenID provider's users' names)"
    )


def provider_principal(issuer: str, value: str) -> str:
    """The principal of the provider `issuer`'s user whose principal claim is `value` (see above)."""
    tag = hashlib.sha256(issuer.encode()).hexdigest()[:_ISSUER_TAG_CHARS]
    readable = f"{PROVIDER_PREFIX}{tag}.{value}"
    if PRINCIPAL_PATTERN.fullmatch(readable):
        return readable
    head = f"{PROVIDER_PREFIX}{tag}-"
    digest = hashlib.sha256(f"{issuer}\0{value}".encode()).hexdigest()
    return head + digest[: MAX_PRINCIPAL_CHARS - len(head)]


@dataclass(frozen=True)
class Principal:
    """A caller; its `name` (matching `PRINCIPAL_PATTERN`) owns the sessions it creates."""

    name: str
    scopes: frozenset[str] = STATIC_DEFAULT
    """What it may do (`gateway.identity.scopes`)."""


LOCAL = Principal("local", frozenset(ALL_SCOPES))
