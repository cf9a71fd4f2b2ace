"""The webhook allow-list (`settings.webhook_policy`): IPv6 forms that embed IPv4, ports, the URL's length."""

from __future__ import annotations

import ipaddress

import pytest

from contracts.webhooks import MAX_WEBHOOK_URL_CHARS
from settings.env_values import SettingsError
from settings.webhook_policy import WebhookPolicy, embedded_ipv4

DEFAULT = WebhookPolicy.from_env({})
LOOPBACK_8080 = WebhookPolicy.from_env(
    {"REACT_WEBHOOK_ALLOW": "127.0.0.1:8080, hooks.internal:8443, [::1]:9000"}
)

EMBEDS_LOOPBACK = [
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::127.0.0.1",  # IPv4-compatible
    "2002:7f00:1::",  # 6to4
    "64:ff9b::7f00:1",  # NAT64
    "64:ff9b:1::7f00:1",  # local-use NAT64
]
EMBEDS_PRIVATE = [
    "::10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:a9fe:a9fe::1",
    "64:ff9b::c0a8:1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo whose client is 192.0.2.45 (not public)
]


@pytest.mark.parametrize("address", EMBEDS_LOOPBACK + EMBEDS_PRIVATE)
def test_an_ipv6_address_that_embeds_a_non_public_ipv4_address_is_refused(address: str) -> None:
    problem = DEFAULT.url_problem(f"http://[{address}]/hook")
    assert problem is not None and "not a public address" in problem and "embeds" in problem


def test_an_ipv6_address_that_embeds_a_public_ipv4_address_is_public() -> None:
    for address in ("::ffff:8.8.8.8", "2002:808:808::1", "64:ff9b::808:808"):
        assert DEFAULT.url_problem(f"https://[{address}]/hook") is None, address
    assert embedded_ipv4(ipaddress.ip_address("2001:0:4136:e378:8000:63bf:3fff:fdd2")) == (
        ipaddress.IPv4Address("65.54.227.120"),
        ipaddress.IPv4Address("192.0.2.45"),
    )
    assert embedded_ipv4(ipaddress.ip_address("2606:4700::1111")) == ()


@pytest.mark.parametrize("address", EMBEDS_LOOPBACK)
def test_an_embedded_loopback_address_is_allowed_where_its_ipv4_address_is_on_that_port_only(
    address: str,
) -> None:
    assert LOOPBACK_8080.url_problem(f"http://[{address}]:8080/hook") is None
    problem = LOOPBACK_8080.url_problem(f"http://[{address}]:7233/hook")
    assert problem is not None and "port 7233" in problem


def test_an_allow_list_entry_with_a_port_allows_that_port_only_and_one_without_any_port() -> None:
    assert LOOPBACK_8080.url_problem("http://127.0.0.1:8080/hook") is None
    for url in ("http://127.0.0.1:7233/", "http://127.0.0.1:6379/", "http://127.0.0.1/"):
        problem = LOOPBACK_8080.url_problem(url)
        assert problem is not None and "REACT_WEBHOOK_ALLOW" in problem, url
    assert LOOPBACK_8080.url_problem("https://hooks.internal:8443/") is None
    private = ipaddress.ip_address("10.0.0.5")  # a name's addresses are checked where it is delivered
    assert LOOPBACK_8080.address_problem("hooks.internal", private, 8443) is None
    assert LOOPBACK_8080.address_problem("hooks.internal", private, 443) is not None
    assert LOOPBACK_8080.url_problem("http://[::1]:9000/") is None
    assert LOOPBACK_8080.url_problem("http://[::1]:9001/") is not None
    address = ipaddress.ip_address("127.0.0.1")
    assert LOOPBACK_8080.address_problem("hooks.internal", address, 8443) is None
    assert LOOPBACK_8080.address_problem("other.internal", address, 7233) is not None
    anywhere = WebhookPolicy.from_env({"REACT_WEBHOOK_ALLOW": "127.0.0.1,10.0.0.0/8,fd00::/8,hooks.internal"})
    for url in (
        "http://127.0.0.1:7233/",
        "http://10.2.3.4:1/",
        "http://[fd00::1]:5/",
        "http://hooks.internal:9/",
    ):
        assert anywhere.url_problem(url) is None, url
    cidr_port = WebhookPolicy.from_env({"REACT_WEBHOOK_ALLOW": "10.0.0.0/8:443,[fd00::/8]:443"})
    assert cidr_port.url_problem("https://10.2.3.4/") is None
    assert cidr_port.url_problem("https://[fd00::1]/") is None
    assert cidr_port.url_problem("http://10.2.3.4/") is not None


@pytest.mark.parametrize(
    "entry",
    ["127.0.0.1:0", "127.0.0.1:99999", "hooks.internal:http", "[::1]:x", "127.0.0.1:8²", "127.0.0.1:٨٠"],
)
def test_an_allow_list_entry_with_a_bad_port_is_refused_by_name(entry: str) -> None:
    with pytest.raises(SettingsError, match="REACT_WEBHOOK_ALLOW"):
        WebhookPolicy.from_env({"REACT_WEBHOOK_ALLOW": entry})


def test_a_url_over_the_bound_is_refused_for_its_length() -> None:
    url = "https://hooks.example.com/" + "a" * MAX_WEBHOOK_URL_CHARS
    assert DEFAULT.url_problem(url) == f"at most 2,000 characters, not {len(url):,}"
