"""What authenticating a request costs: a static token next to an OpenID provider's, in one run.

    .venv/bin/python -m bench.identity --requests 3000

Starts the test OpenID provider (tests/oidc_provider.py) as a process, builds the guard's
`Admission` for a gateway trusting it, and times `Admission.principal` (what the guard awaits for
every request) for a static token and for a provider's RS256 token (its keys cached after the
first request: no I/O), alternating in batches so both see the same machine. Prints p50 and p99
in microseconds and the ratio; no Temporal is needed (authentication reads none).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from gateway.guard.admission import Admission
from gateway.identity.settings import IdentitySettings, OidcSettings
from gateway.settings import GatewaySettings, parse_tokens
from tests.oidc_helpers import running_provider

AUDIENCE = "http://127.0.0.1:8400"
STATIC = "static-token-0123456789"
BATCH = 100


async def _time(admission: Admission, token: str, samples: list[float]) -> None:
    headers = {"authorization": f"Bearer {token}"}
    for _ in range(BATCH):
        started = time.perf_counter()
        principal = await admission.principal(headers, "/api/threads", public=False)
        samples.append((time.perf_counter() - started) * 1e6)
        assert principal is not None


async def main(requests: int) -> None:
    async with running_provider(audience=AUDIENCE) as provider:
        oidc = OidcSettings(issuer=provider.issuer, audience=AUDIENCE)
        settings = GatewaySettings(
            tokens=parse_tokens(f"{STATIC}=alice"), identity=IdentitySettings(oidc=oidc)
        )
        admission = Admission(settings)
        minted = await provider.mint(sub="alice", scope="agents:ask")
        await admission.principal({"authorization": f"Bearer {minted}"}, "/api/threads", public=False)
        static: list[float] = []
        signed: list[float] = []
        for _ in range(max(1, requests // BATCH)):
            await _time(admission, STATIC, static)
            await _time(admission, minted, signed)
        await admission.aclose()

    def row(name: str, samples: list[float]) -> str:
        p99 = statistics.quantiles(samples, n=100)[98]
        return f"| {name} | {len(samples)} | {statistics.median(samples):.1f} | {p99:.1f} |"

    print("| token | requests | p50 µs | p99 µs |")
    print("|---|---|---|---|")
    print(row("static (`REACT_GATEWAY_TOKENS`)", static))
    print(row("OpenID provider (RS256, keys cached)", signed))
    print(f"\nratio of p50 (provider / static): {statistics.median(signed) / statistics.median(static):.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="What authenticating a request costs.")
    parser.add_argument("--requests", type=int, default=3000)
    asyncio.run(main(parser.parse_args().requests))
