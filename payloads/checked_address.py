"""The address an outgoing request connects to, checked against an allow-list policy (`WebhookPolicy`).

Webhook deliveries (`activities.background.webhook_post`) and attachment URLs
(`payloads.url_fetch`) connect the same way: the URL's form is checked (`url_problem`), its host
is resolved once, every address it resolves to must pass (`address_problem`), and the request
goes to the first of them (so no second lookup a DNS rebinding could change is ever made).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Final

from yarl import URL

from settings.webhook_policy import WebhookPolicy

__all__ = ["AddressRefusedError", "checked_address"]

_NO_SUCH_NAME: Final = frozenset(
    code for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None)) if code
)


class AddressRefusedError(ValueError):
    """A destination the policy refuses, or a host name that does not exist: no later attempt changes it."""


async def checked_address(policy: WebhookPolicy, url: URL) -> str:
    """The address to connect to for `url`: the first its host resolves to, every one of them allowed.

    Raises:
        AddressRefusedError: the URL's form or one of its addresses is refused, or the name does not exist.
        ConnectionError: the name could not be resolved now (a later attempt may).
    """
    host = (url.host or "").lower().rstrip(".")
    problem = policy.url_problem(str(url))
    if problem is not None:
        raise AddressRefusedError(problem)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        if error.errno in _NO_SUCH_NAME:  # the name does not exist: a later attempt would not find it
            raise AddressRefusedError(f"{host} does not resolve: {error}") from None
        raise ConnectionError(f"{host} does not resolve: {error}") from None
    except OSError as error:
        raise ConnectionError(f"{host} does not resolve: {error}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    for address in addresses:
        problem = policy.address_problem(host, address, port)
        if problem is not None:
            raise AddressRefusedError(problem)
    return str(addresses[0])
