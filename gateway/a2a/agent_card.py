"""The A2A agent card's OpenID Connect scheme: how a client gets a token for the agents.

With a provider configured, every card declares an `oidc` scheme (`openIdConnectUrl`: the
provider's discovery document) beside the static tokens' HTTP bearer scheme, and a security
requirement naming the scopes an A2A client needs (`agents:ask` to send, get and cancel tasks,
`agents:approve` to answer `input-required`). Either requirement satisfies the card (A2A's
requirements are alternatives).
"""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCard,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from gateway.identity.scopes import APPROVE, ASK
from gateway.identity.settings import OidcSettings

__all__ = ["OIDC_SCHEME", "declare_openid_connect"]

OIDC_SCHEME = "oidc"


def declare_openid_connect(card: AgentCard, oidc: OidcSettings | None) -> AgentCard:
    """`card` with the provider's OpenID Connect scheme and its scopes (unchanged without a provider)."""
    if oidc is None:
        return card
    card.security_schemes[OIDC_SCHEME].CopyFrom(
        SecurityScheme(
            open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                open_id_connect_url=oidc.discovery_url,
                description=f"Tokens of {oidc.issuer} for the audience {oidc.audience}; scopes "
                f"{ASK} (tasks) and {APPROVE} (answering input-required).",
            )
        )
    )
    requirement = SecurityRequirement()
    requirement.schemes[OIDC_SCHEME].CopyFrom(StringList(list=[ASK, APPROVE]))
    card.security_requirements.append(requirement)
    return card
