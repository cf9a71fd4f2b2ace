"""Where webhooks may go, how they are signed, how long a delivery tries: the deployment's webhook settings.

- `REACT_WEBHOOK_SECRET`: the signing secret, Standard Webhooks' `whsec_<base64>`.
- `REACT_WEBHOOK_ALLOW`: hosts and CIDRs (comma-separated) a webhook may reach although they
  are private, loopback, link-local or otherwise not public (`127.0.0.1`, `10.0.0.0/8`,
  `hooks.internal`). A public address needs no entry; anything else is refused.
- `REACT_WEBHOOK_TIMEOUT_S`: one attempt's timeout (default 10 s).
- `REACT_WEBHOOK_GIVE_UP_S`: a delivery gives up this long after the event (default 86,400 s).

The address checked is the one connected to: a host name is resolved once per attempt, every
address it resolves to must pass, and the attempt connects to that address (no second lookup a
DNS rebinding could change). Redirects are never followed: a 3xx answer gives up.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from payloads.env_values import SettingsError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_TIMEOUT_S: Final = 10.0
DEFAULT_GIVE_UP_S: Final = 86_400.0
SECRET_VARIABLE: Final = "REACT_WEBHOOK_SECRET"
ALLOW_VARIABLE: Final = "REACT_WEBHOOK_ALLOW"


@dataclass(frozen=True)
class WebhookPolicy:
    """The deployment's webhook settings (`from_env`)."""

    secret: str | None = field(default=None, repr=False)
    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    give_up_s: float = DEFAULT_GIVE_UP_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WebhookPolicy:
        """The settings of the environment.

        Raises:
            SettingsError: a variable with a value that cannot be used (named).
        """
        env = os.environ if env is None else env
        secret = env.get(SECRET_VARIABLE, "").strip() or None
        if secret is not None and not secret.startswith("whsec_"):
            raise SettingsError(SECRET_VARIABLE, "must be a Standard Webhooks secret: whsec_<base64>")
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for item in filter(None, (part.strip() for part in env.get(ALLOW_VARIABLE, "").split(","))):
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(item.lower().rstrip("."))
        return cls(
            secret=secret,
            hosts=frozenset(hosts),
            networks=tuple(networks),
            timeout_s=_seconds(env, "REACT_WEBHOOK_TIMEOUT_S", DEFAULT_TIMEOUT_S),
            give_up_s=_seconds(env, "REACT_WEBHOOK_GIVE_UP_S", DEFAULT_GIVE_UP_S),
        )

    def url_problem(self, url: str) -> str | None:
        """Why a webhook may not go to `url` by its form (scheme, host, a non-public literal address)."""
        try:
            parts = urlsplit(url)
            _ = parts.port  # a bad port raises here
        except ValueError:
            return f"{url[:100]!r} is not a URL"
        host = (parts.hostname or "").lower().rstrip(".")
        if parts.scheme not in ("http", "https") or not host:
            return "an http(s) URL with a host"
        if parts.username is not None or parts.password is not None:
            return "no credentials in the URL"
        if host in self.hosts:
            return None
        if host == "localhost" or host.endswith(".localhost"):
            return self.address_problem(host, ipaddress.ip_address("127.0.0.1"))
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            return None  # a name: its addresses are checked where it is delivered (`address_problem`)
        return self.address_problem(host, literal)

    def address_problem(self, host: str, address: IPAddress) -> str | None:
        """Why a webhook may not connect to `address` (of `host`): not public and not allowed."""
        if host in self.hosts or any(
            address in net for net in self.networks if net.version == address.version
        ):
            return None
        if address.is_global and not address.is_multicast:
            return None
        return f"{host} ({address}) is not a public address and {ALLOW_VARIABLE} does not allow it"


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 10 * 365 * 86_400:
        raise SettingsError(name, "must be a positive number of seconds")
    return value
