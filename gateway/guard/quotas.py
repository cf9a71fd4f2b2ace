"""Quotas of a principal's runs, counted from Temporal so every gateway instance agrees.

- **Active requests** (`REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL`): the principal's running
  `ReActRun` workflows, counted by a visibility query over the workflow ids the principal owns
  (`gw/<principal>/...`: its sessions' runs, forks' and the agents they call as tools). An ask
  when that many run is refused; an ask that would wait in a session's queue counts once it runs.
- **Tokens today** (`REACT_GATEWAY_DAILY_TOKENS_PER_PRINCIPAL`): the total tokens of the
  principal's runs started since 00:00 UTC, read from each ended run's result (kept by this
  gateway once read: an ended run's usage never changes). A running run counts from its end, so
  the budget can be passed by what the runs in flight spend (bounded by the active-request quota
  and the agents' `usage_limits`).

Both are read at admission: asks that arrive together may pass together. A refusal is 429
`quota_exceeded` naming the quota and the numbers, with `Retry-After` (the active quota: a few
seconds; the daily one: the seconds until 00:00 UTC), and nothing is asked. The active count is
read at each ask (one count query); the day's tokens are kept `tokens_cache_s` (5 s) per principal
and read one at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from clients.runs import Runs
from contracts import WORKFLOW_TYPE
from contracts.errors import QUOTA_EXCEEDED
from gateway.errors import GatewayError
from gateway.identity.settings import QuotaSettings
from gateway.owners import PREFIX

__all__ = ["RunQuotas"]

ACTIVE_RETRY_S = 5
MAX_RUNS_READ = 1000
"""The most runs of one principal a day whose usage is summed (the oldest beyond are not read)."""
MAX_KEPT_USAGES = 100_000


class RunQuotas:
    """The active-request and daily-token quotas (`admit` before an ask)."""

    def __init__(
        self,
        settings: QuotaSettings,
        client: Client,
        runs: Runs,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """Quotas of `settings`, read through `client`'s visibility and `runs`' results."""
        self._settings = settings
        self._client = client
        self._runs = runs
        self._now = now
        self._usage_of_ended: OrderedDict[str, int] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._readings: dict[str, tuple[float, int]] = {}
        """principal -> (when, tokens today)."""

    @property
    def enabled(self) -> bool:
        """Whether any run quota is set."""
        return (
            self._settings.max_active_per_principal is not None
            or self._settings.daily_tokens_per_principal is not None
        )

    async def admit(self, principal: str) -> None:
        """Refuse an ask of `principal` over a quota.

        Raises:
            GatewayError: 429 `quota_exceeded` with `Retry-After`.
        """
        if not self.enabled:
            return
        active, tokens = await self._reading(principal)
        limit = self._settings.max_active_per_principal
        if limit is not None and active >= limit:
            raise GatewayError(
                429,
                QUOTA_EXCEEDED,
                f"quota max_active_per_principal: {principal!r} has {active} active requests of {limit}; "
                "wait for one to end",
                headers={"Retry-After": str(ACTIVE_RETRY_S)},
            )
        budget = self._settings.daily_tokens_per_principal
        if budget is not None and tokens >= budget:
            now = self._now()
            midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
            wait = max(1, int((midnight - now).total_seconds()) + 1)
            raise GatewayError(
                429,
                QUOTA_EXCEEDED,
                f"quota daily_tokens_per_principal: {principal!r} has used {tokens:,} tokens of "
                f"{budget:,} today (UTC)",
                headers={"Retry-After": str(wait)},
            )

    async def _reading(self, principal: str) -> tuple[int, int]:
        try:
            active = await self._active(principal)
            tokens = await self._tokens_today(principal)
        except RPCError:
            raise GatewayError(
                503, "unavailable", "the quotas could not be read from Temporal; try again"
            ) from None
        return active, tokens

    def _owned(self, principal: str) -> str:
        # Principal names match `^[A-Za-z0-9_.-]{1,32}$`: safe inside the quotes.
        return f"WorkflowType = '{WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '{PREFIX}/{principal}/'"

    async def _active(self, principal: str) -> int:
        if self._settings.max_active_per_principal is None:
            return 0
        counted = await self._client.count_workflows(
            f"{self._owned(principal)} AND ExecutionStatus = 'Running'"
        )
        return counted.count

    async def _tokens_today(self, principal: str) -> int:
        """The tokens of the principal's runs today (a reading is kept `tokens_cache_s`; one at a time)."""
        if self._settings.daily_tokens_per_principal is None:
            return 0
        async with self._locks.setdefault(principal, asyncio.Lock()):
            cached = self._readings.get(principal)
            if cached is not None and time.monotonic() - cached[0] < self._settings.tokens_cache_s:
                return cached[1]
            tokens = await self._sum_today(principal)
            self._readings[principal] = (time.monotonic(), tokens)
            return tokens

    async def _sum_today(self, principal: str) -> int:
        midnight = self._now().replace(hour=0, minute=0, second=0, microsecond=0)
        query = f"{self._owned(principal)} AND StartTime >= '{midnight.strftime('%Y-%m-%dT%H:%M:%SZ')}'"
        total = 0
        async for execution in self._client.list_workflows(query, limit=MAX_RUNS_READ):
            if execution.status in (None, WorkflowExecutionStatus.RUNNING):
                continue
            total += await self._usage_of(execution.id, execution.run_id or "")
        return total

    async def _usage_of(self, workflow_id: str, run_id: str) -> int:
        key = f"{workflow_id}/{run_id}"
        known = self._usage_of_ended.get(key)
        if known is not None:
            return known
        try:
            result = await self._runs.get(workflow_id).result()
            tokens = result.outcome.usage.total_tokens
        except RPCError:
            raise
        except Exception:  # a terminated or timed-out run has no result: nothing to count
            tokens = 0
        self._usage_of_ended[key] = tokens
        if len(self._usage_of_ended) > MAX_KEPT_USAGES:
            self._usage_of_ended.popitem(last=False)
        return tokens
