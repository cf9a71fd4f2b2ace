"""Requests per minute per principal, counted by this gateway instance (a token bucket each).

`REACT_GATEWAY_REQUESTS_PER_MINUTE` is a per-instance limit: behind N gateways a principal may send
up to N times it. A bucket holds a minute's requests and refills continuously, so a burst of the
whole minute is allowed, then one request every 60/N seconds. A refusal is 429 `rate_limited`
with `Retry-After` (whole seconds until one request fits). At most `MAX_PRINCIPALS` buckets are
kept; the fullest (the idlest principals) go first. The chat page's token exchange has buckets of
its own, per client address (`gateway.guard.chat_signin`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from contracts.errors import RATE_LIMITED
from gateway.errors import GatewayError

__all__ = ["MAX_PRINCIPALS", "RequestRate"]

MAX_PRINCIPALS = 10_000


class RequestRate:
    """A token bucket per principal of `per_minute` requests."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        """Buckets of `per_minute` requests, refilled over a minute, on `clock`."""
        self._capacity = float(per_minute)
        self._per_second = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        """principal -> (requests left, when it was counted)."""

    def admit(self, principal: str) -> None:
        """Count one request of `principal`.

        Raises:
            GatewayError: 429 `rate_limited` with `Retry-After`.
        """
        now = self._clock()
        left, at = self._buckets.get(principal, (self._capacity, now))
        left = min(self._capacity, left + (now - at) * self._per_second)
        if left < 1.0:
            self._buckets[principal] = (left, now)
            wait = math.ceil((1.0 - left) / self._per_second)
            raise GatewayError(
                429,
                RATE_LIMITED,
                f"over the gateway's limit of {int(self._capacity)} requests a minute for {principal!r}; "
                f"retry after {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self._buckets[principal] = (left - 1.0, now)
        if len(self._buckets) > MAX_PRINCIPALS:
            self._forget_idlest(now)

    def _forget_idlest(self, now: float) -> None:
        def refilled(item: tuple[str, tuple[float, float]]) -> float:
            left, at = item[1]
            return left + (now - at) * self._per_second

        keep = sorted(self._buckets.items(), key=refilled)[: MAX_PRINCIPALS // 2]
        self._buckets = dict(keep)
