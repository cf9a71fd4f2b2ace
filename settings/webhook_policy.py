"""Where webhooks may go, how they are signed, how long a delivery tries: the deployment's webhook settings.

- `REACT_WEBHOOK_SECRET`: the signing secret, Standard Webhooks' `whsec_<base64>`.
- `REACT_WEBHOOK_ALLOW`: hosts and CIDRs (comma-separated) a webhook may reach although they
  are private, loopback, link-local or otherwise not public (`127.0.0.1`, `10.0.0.0/8`,
  `hooks.internal`), each on any port, or on one port only with `:<port>` (`127.0.0.1:8080`,
  `[::1]:8080`, `10.0.0.0/8:443`, `hooks.internal:8443`). A public address needs no entry;
  anything else is refused.
- `REACT_WEBHOOK_TIMEOUT_S`: one attempt's timeout (default 10 s).
- `REACT_WEBHOOK_GIVE_UP_S`: a delivery gives up this long after the event (default 86,400 s).

The address checked is the one connected to: a host name is resolved once per attempt, every
address it resolves to must pass, and the attempt connects to that address (no second lookup a
DNS rebinding could change). Redirects are never followed: a 3xx answer gives up. An IPv6
address that embeds an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
6to4 `2002::/16`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, Teredo `2001::/32`) is as public
as the IPv4 address it embeds (each, for Teredo's two), and allowed where that one is.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from contracts.webhooks import MAX_WEBHOOK_URL_CHARS
from contracts.whole_numbers import port_number
from settings.env_values import SettingsError

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
    hosts: tuple[tuple[str, int | None], ...] = ()
    """Allowed host names, each with its one port (None: any)."""
    networks: tuple[tuple[IPNetwork, int | None], ...] = ()
    """Allowed networks (an address is a /32 or /128), each with its one port (None: any)."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    give_up_s: float = DEFAULT_GIVE_UP_S
    public: bool = True
    """Whether a public address needs no entry (webhooks: yes; attachment URLs: only with `public`)."""
    variable: str = ALLOW_VARIABLE
    """The allow-list's variable, named in refusals."""

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
        hosts, networks = parse_allow_list(ALLOW_VARIABLE, env.get(ALLOW_VARIABLE, ""))
        return cls(
            secret=secret,
            hosts=hosts,
            networks=networks,
            timeout_s=_seconds(env, "REACT_WEBHOOK_TIMEOUT_S", DEFAULT_TIMEOUT_S),
            give_up_s=_seconds(env, "REACT_WEBHOOK_GIVE_UP_S", DEFAULT_GIVE_UP_S),
        )

    def url_problem(self, url: str) -> str | None:
        """Why a webhook may not go to `url` by its form (length, scheme, host, a non-public literal)."""
        if len(url) > MAX_WEBHOOK_URL_CHARS:
            return f"at most {MAX_WEBHOOK_URL_CHARS:,} characters, not {len(url):,}"
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
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if self._host_allowed(host, port):
            return None
        if host == "localhost" or host.endswith(".localhost"):
            return self.address_problem(host, ipaddress.ip_address("127.0.0.1"), port)
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            return None  # a name: its addresses are checked where it is delivered (`address_problem`)
        return self.address_problem(host, literal, port)

    def address_problem(self, host: str, address: IPAddress, port: int) -> str | None:
        """Why a webhook may not connect to `address` (of `host`) on `port`: not public and not allowed.

        An IPv6 address that embeds IPv4 addresses is judged by them (`embedded_ipv4`).
        """
        if self._host_allowed(host, port) or self._address_allowed(address, port):
            return None
        embedded = embedded_ipv4(address)
        public = self.public
        if embedded and all(
            self._address_allowed(inner, port) or (public and _public(inner)) for inner in embedded
        ):
            return None
        if not embedded and public and _public(address):
            return None
        embeds = f", which embeds {', '.join(map(str, embedded))}" if embedded else ""
        if not public:
            return f"{host} ({address}{embeds}) port {port} is not on {self.variable}"
        return (
            f"{host} ({address}{embeds}) port {port} is not a public address"
            f" and {self.variable} does not allow it"
        )

    def _host_allowed(self, host: str, port: int) -> bool:
        return any(name == host and allowed in (None, port) for name, allowed in self.hosts)

    def _address_allowed(self, address: IPAddress, port: int) -> bool:
        return any(
            net.version == address.version and address in net and allowed in (None, port)
            for net, allowed in self.networks
        )


_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: IPAddress) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (none for an IPv4 address or a plain IPv6 one).

    IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, `::1` and `::` included, which
    carry `0.0.0.1` and `0.0.0.0`: not public either), 6to4 (`2002:aabb:ccdd::/48`), NAT64
    (the last 32 bits) and Teredo (its server and its client).
    """
    if isinstance(address, ipaddress.IPv4Address):
        return ()
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address in _IPV4_COMPATIBLE or any(address in net for net in _NAT64):
        return (low32,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    return ()


def _public(address: IPAddress) -> bool:
    return address.is_global and not address.is_multicast


def parse_allow_list(
    variable: str, text: str
) -> tuple[tuple[tuple[str, int | None], ...], tuple[tuple[IPNetwork, int | None], ...]]:
    """The hosts and networks (each with its one port, None: any) of an allow-list like `REACT_WEBHOOK_ALLOW`.

    Raises:
        SettingsError: an entry that is not a host, address or CIDR (named with `variable`).
    """
    hosts: list[tuple[str, int | None]] = []
    networks: list[tuple[IPNetwork, int | None]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        entry, port = _allow_entry(item, variable)
        try:
            networks.append((ipaddress.ip_network(entry, strict=False), port))
        except ValueError:
            if not entry or "/" in entry or ":" in entry or "[" in entry:
                raise SettingsError(variable, f"{item!r} is not a host, address or CIDR") from None
            hosts.append((entry.lower().rstrip("."), port))
    return tuple(hosts), tuple(networks)


def _allow_entry(item: str, variable: str = ALLOW_VARIABLE) -> tuple[str, int | None]:
    """An allow-list entry's host, address or CIDR and its port (None: any).

    `host:port`, `a.b.c.d:port`, `cidr:port` and `[ipv6]:port` / `[ipv6/len]:port` name a port; a
    bare IPv6 address or CIDR (`::1`, `fd00::/8`) has none.

    Raises:
        SettingsError: a port that is not 1 to 65535.
    """
    if item.startswith("["):
        inside, _, rest = item[1:].partition("]")
        if not rest:
            return inside, None
        return inside, _port(item, rest.removeprefix(":") if rest.startswith(":") else "", variable)
    if item.count(":") == 1:
        entry, _, port = item.partition(":")
        return entry, _port(item, port, variable)
    return item, None


def _port(item: str, raw: str, variable: str) -> int:
    port = port_number(raw)
    if port is None:
        raise SettingsError(variable, f"{item!r}: a port is 1 to 65535")
    return port


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
