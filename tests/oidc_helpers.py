"""The test OpenID provider (`tests/oidc_provider.py`) as a process on 127.0.0.1, and signing in to it.

    async with running_provider(audience=gateway_url) as provider:
        tokens = await provider.sign_in("alice", scope="agents:ask")   # the login page, code + PKCE
        expired = await provider.mint(exp=int(time.time()) - 600)      # a token of its own key

`sign_in` drives the authorization code grant with PKCE over HTTP as a browser would: it GETs
the authorization endpoint, posts the login form the provider's page holds, follows the redirect
to read the code, and trades it (with the verifier) at the token endpoint.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

__all__ = [
    "PUBLIC_CLIENT",
    "REDIRECT_URI",
    "TEST_USERS",
    "OidcProvider",
    "free_port",
    "pkce_pair",
    "running_provider",
]

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_CLIENT = "chat-page"
REDIRECT_URI = "http://127.0.0.1/callback"
TEST_USERS: Mapping[str, Mapping[str, str]] = {
    "alice": {"password": "alice-pw", "scopes": "agents:ask agents:approve agents:schedules"},
    "bob": {"password": "bob-pw", "scopes": "agents:ask"},
    "root": {"password": "root-pw", "scopes": "agents:ask agents:approve agents:schedules agents:admin"},
}
_HIDDEN = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">')
_ACTION = re.compile(r'<form method="post" action="([^"]+)">')


def free_port() -> int:
    """A free loopback port (bound and released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass
class OidcProvider:
    """A running test provider."""

    base: str
    process: subprocess.Popen[bytes]

    @property
    def issuer(self) -> str:
        """Its issuer (`REACT_GATEWAY_OIDC_ISSUER`)."""
        return f"{self.base}/realms/test"

    async def metadata(self) -> dict[str, Any]:
        """Its discovery document."""
        async with httpx.AsyncClient() as http:
            response = await http.get(f"{self.issuer}/.well-known/openid-configuration")
            return cast("dict[str, Any]", response.json())

    async def login_redirect(self, authorize_url: str, user: str, password: str) -> str:
        """Open `authorize_url`'s login page, sign in as `user`: the redirect's URL (with the code)."""
        async with httpx.AsyncClient(follow_redirects=False) as http:
            page = await http.get(authorize_url)
            assert page.status_code == 200, page.text
            action = _ACTION.search(page.text)
            assert action is not None, page.text
            form = {name: unescape(value) for name, value in _HIDDEN.findall(page.text)}
            posted = await http.post(
                unescape(action[1]), data={**form, "username": user, "password": password}
            )
            assert posted.status_code == 302, posted.text
            return posted.headers["location"]

    async def sign_in(
        self,
        user: str,
        *,
        scope: str = "",
        resource: str | None = None,
        client_id: str = PUBLIC_CLIENT,
        redirect_uri: str = REDIRECT_URI,
    ) -> dict[str, Any]:
        """The token response of `user` signing in through the login page (code + PKCE)."""
        meta = await self.metadata()
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(8)
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": scope,
        }
        if resource is not None:
            query["resource"] = resource
        location = await self.login_redirect(
            f"{meta['authorization_endpoint']}?{urlencode(query)}", user, TEST_USERS[user]["password"]
        )
        params = parse_qs(urlsplit(location).query)
        assert params["state"] == [state]
        form = {
            "grant_type": "authorization_code",
            "code": params["code"][0],
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        async with httpx.AsyncClient() as http:
            response = await http.post(meta["token_endpoint"], data=form)
            assert response.status_code == 200, response.text
            return cast("dict[str, Any]", response.json())

    async def mint(self, **claims: object) -> str:
        """An access token signed by the provider's current key, `claims` over the usual ones.

        A claim given as None is left out.
        """
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{self.base}/admin/mint", json=claims)
            return str(response.json()["access_token"])

    async def rotate(self, *, keep_old: bool = True) -> str:
        """Sign with a new key from now on (`keep_old=False`: the old keys leave the JWKS); its kid."""
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{self.base}/admin/rotate", json={"keep_old": keep_old})
            return str(response.json()["kid"])

    async def jwks_reads(self) -> int:
        """How many times its JWKS was read."""
        async with httpx.AsyncClient() as http:
            return int((await http.get(f"{self.base}/admin/stats")).json()["jwks_reads"])

    async def jwks(self) -> dict[str, Any]:
        """Its JWKS document (the public keys)."""
        meta = await self.metadata()
        async with httpx.AsyncClient() as http:
            return cast("dict[str, Any]", (await http.get(meta["jwks_uri"])).json())


def _spawn(command: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=ROOT)


@asynccontextmanager
async def running_provider(
    audience: str,
    *,
    clients: Mapping[str, list[str]] | None = None,
    token_ttl_s: int = 300,
) -> AsyncIterator[OidcProvider]:
    """The test provider as a process on a free loopback port, until the block ends."""
    port = free_port()
    registered = {PUBLIC_CLIENT: [REDIRECT_URI], **(clients or {})}
    command = [
        sys.executable,
        "-m",
        "tests.oidc_provider",
        "--port",
        str(port),
        "--audience",
        audience,
        "--users",
        json.dumps(TEST_USERS),
        "--clients",
        json.dumps(registered),
        "--token-ttl",
        str(token_ttl_s),
    ]
    process = _spawn(command)
    provider = OidcProvider(base=f"http://127.0.0.1:{port}", process=process)
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(600):
                if process.poll() is not None:
                    raise RuntimeError(f"the test provider exited with {process.returncode}")
                with contextlib.suppress(httpx.HTTPError):
                    if (
                        await http.get(f"{provider.issuer}/.well-known/openid-configuration")
                    ).status_code == 200:
                        break
                await asyncio.sleep(0.05)
            else:
                raise TimeoutError("the test provider did not start within 30 s")
        yield provider
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
