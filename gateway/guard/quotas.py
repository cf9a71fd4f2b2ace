"""Quotas of a principal's runs, held in Temporal so every gateway instance (and worker) agrees.

- **Active requests** (`REACT_GATEWAY_MAX_ACTIVE_PER_PRINCIPAL`, `ActiveRequests`): the principal's
  requests that wait in a session's queue, run or await approval, whatever the protocol or
  schedule that asked them (an agent called as a tool is part of its request). Each ask is
  admitted before it is sent: the principal's `RunAdmission` workflow (`admission/<principal>`)
  grants a slot or refuses, one decision at a time, so asks that arrive together never pass the
  limit together. The request core admits every protocol's ask (`RequestCore.asks.ask`); a schedule's
  firing admits in the worker (`ask_for_schedule`) under the same setting. An ask that made no new
  request (refused by the session, steered into the running one) gives its slot back at once; a
  request's slot is freed once it ends (the workflow checks its holders when full), and a
  session that is gone, or an ask that never reached it in 60 s, holds none.
- **Tokens today** (`REACT_GATEWAY_DAILY_TOKENS_PER_PRINCIPAL`, `RunQuotas`, in the guard): the
  total tokens of the principal's runs started since 00:00 UTC, read from each ended run's result
  (kept by this gateway once read: an ended run's usage never changes). A running run counts from
  its end, so the budget can be passed by what the runs in flight spend (bounded by the
  active-request quota and the agents' `usage_limits`). The day's tokens are kept
  `tokens_cache_s` (5 s) per principal and read one at a time: asks that arrive together may pass
  together.

A refusal is 429 `quota_exceeded` naming the quota and the numbers, with `Retry-After` (the active
quota: a few seconds; the daily one: the seconds until 00:00 UTC), and nothing is asked.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.service import RPCError

from activities.background.run_admission import admit_request, release_request
from clients.runs import Runs
from contracts import WORKFLOW_TYPE
from contracts.admission import SlotHolder
from contracts.errors import QUOTA_EXCEEDED
from gateway.errors import GatewayError
from gateway.identity.settings import QuotaSettings
from gateway.owners import PREFIX

__all__ = ["ActiveRequests", "RunQuotas"]

ACTIVE_RETRY_S = 5
MAX_RUNS_READ = 1000
"""The most runs of one principal a day whose usage is summed (the oldest beyond are not read)."""
MAX_KEPT_USAGES = 100_000


class RunQuotas:
    """The daily-token quota (`admit` before an ask, in the guard)."""

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
        """Whether the daily-token quota is set."""
        return self._settings.daily_tokens_per_principal is not None

    async def admit(self, principal: str) -> None:
        """Refuse an ask of `principal` over the day's tokens.

        Raises:
            GatewayError: 429 `quota_exceeded` with `Retry-After`.
        """
        if not self.enabled:
            return
        tokens = await self._reading(principal)
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

    async def _reading(self, principal: str) -> int:
        try:
            return await self._tokens_today(principal)
        except RPCError:
            raise _unavailable() from None

    def _owned(self, principal: str) -> str:
        # Principal names match `^[A-Za-z0-9_.-]{1,32}$`: safe inside the quotes.
        return f"WorkflowType = '{WORKFLOW_TYPE}' AND WorkflowId STARTS_WITH '{PREFIX}/{principal}/'"

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


class ActiveRequests:
    """The active-request quota: a slot of the principal's `RunAdmission` for each request asked."""

    def __init__(self, settings: QuotaSettings, client: Client, task_queue: str) -> None:
        """The quota of `settings`, admitted by the workflows `client` reaches on `task_queue`."""
        self._limit = settings.max_active_per_principal
        self._client = client
        self._task_queue = task_queue

    @property
    def enabled(self) -> bool:
        """Whether the quota is set."""
        return self._limit is not None

    async def hold(self, principal: str, session_id: str, request_id: str) -> None:
        """Take a slot for request `request_id` of `session_id` (one held already: kept).

        Raises:
            GatewayError: 429 `quota_exceeded` with `Retry-After` (the limit's slots are held);
                503 `unavailable` (Temporal did not answer).
        """
        if self._limit is None:
            return
        holder = SlotHolder(session_id=session_id, request_id=request_id)
        try:
            decision = await admit_request(self._client, principal, holder, self._limit, self._task_queue)
        except (RPCError, WorkflowUpdateFailedError):
            raise _unavailable() from None
        if decision.outcome == "refused":
            raise GatewayError(
                429,
                QUOTA_EXCEEDED,
                f"quota max_active_per_principal: {principal!r} has {decision.held} active requests of "
                f"{decision.limit}; wait for one to end",
                headers={"Retry-After": str(ACTIVE_RETRY_S)},
            )

    async def release(self, principal: str, session_id: str, request_id: str) -> None:
        """Give back the slot of a request the ask did not make (refused, or steered into another)."""
        if self._limit is not None:
            await release_request(
                self._client, principal, SlotHolder(session_id=session_id, request_id=request_id)
            )


def _unavailable() -> GatewayError:
    return GatewayError(503, "unavailable", "the quotas could not be read from Temporal; try again")
