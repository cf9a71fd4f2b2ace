"""Usage limits: the run ends `failed` with `usage_limit_exceeded` before an LLM call that would exceed a cap.

Checked before every LLM call (before the request transformer runs), against
`config.usage_limits`:

- `per_request` against the run's usage so far (`RunLedger.usage`: its own calls and
  those of the agents it called as tools, added when each agent returns);
- `per_session` against the session's usage before this request (`RunInput.session_usage`,
  which a session passes) plus the run's. A run started on its own is its own session.

For each budget:

- `max_llm_calls`: the next call would be one too many (`used + 1 > cap`);
- `max_total_tokens`: the tokens used plus the next call's estimated input tokens (the
  projected view's `estimated_tokens`, by the context policy's estimator) exceed the cap.
  The answer's own tokens are not known before the call, so a run may end at most one
  call's completion over the cap;
- `max_cost_usd`: the cost so far has reached the cap (`used >= cap`): the price of a call
  is only known after it, so the call that crosses the cap is the last one. Calls of
  models without a known price add no cost (`Usage.unpriced_calls`).

A call cut short by an interrupting steer reports no usage, so the run estimates it
(`interrupted_usage`): one LLM call, its input at the view's `estimated_tokens`, its output
at what it had streamed (`estimate_text_tokens`: nothing, for a call that does not stream),
priced at the run's cost per token so far (a run with no priced call yet counts it in
`unpriced_calls`). Cutting calls short cannot spend past a cap.
"""

from __future__ import annotations

from contracts.agent import UsageBudget, UsageLimits
from contracts.errors import USAGE_LIMIT_EXCEEDED
from contracts.llm import Usage
from conversation import ModelView
from conversation.budget import estimate_text_tokens
from workflows.run.ledger import RunFailedError, RunLedger


def budget_problem(budget: UsageBudget, used: Usage, next_tokens: int) -> str | None:
    """Why the next call (its input estimated at `next_tokens`) would exceed `budget`, or None."""
    if budget.max_llm_calls is not None and used.llm_calls + 1 > budget.max_llm_calls:
        return f"max_llm_calls is {budget.max_llm_calls:,}: {used.llm_calls:,} LLM calls were made already"
    cap = budget.max_total_tokens
    if cap is not None and used.total_tokens + next_tokens > cap:
        return (
            f"max_total_tokens is {cap:,}: {used.total_tokens:,} tokens were used and the next call's "
            f"input is estimated at {next_tokens:,} tokens"
        )
    if budget.max_cost_usd is not None and used.cost_usd >= budget.max_cost_usd:
        return f"max_cost_usd is {budget.max_cost_usd:g}: ${used.cost_usd:.6f} was spent already"
    return None


def interrupted_usage(input_tokens: int, streamed: str, used: Usage) -> Usage:
    """The estimated usage of a call cut short: input `input_tokens`, output what it `streamed`.

    Priced at `used`'s cost per token (its priced calls'); without one it counts as unpriced.
    """
    output = estimate_text_tokens(streamed) if streamed else 0
    total = input_tokens + output
    priced = used.total_tokens > 0 and used.cost_usd > 0
    return Usage(
        prompt_tokens=input_tokens,
        completion_tokens=output,
        total_tokens=total,
        llm_calls=1,
        cost_usd=used.cost_usd / used.total_tokens * total if priced else 0.0,
        unpriced_calls=0 if priced else 1,
    )


class UsageGuard:
    """Checks a run's usage limits before each LLM call and describes them for the Web UI."""

    def __init__(self, limits: UsageLimits | None, session_usage: Usage | None, ledger: RunLedger) -> None:
        """Bind the config's limits, the session's usage before this run, and the run's ledger."""
        self._limits = limits
        self._session = session_usage or Usage()
        self._ledger = ledger

    def _scopes(self) -> list[tuple[str, UsageBudget, Usage]]:
        if self._limits is None:
            return []
        run = self._ledger.usage
        return [
            ("per_request", self._limits.per_request, run),
            ("per_session", self._limits.per_session, self._session.plus(run)),
        ]

    def check(self, view: ModelView) -> None:
        """Raise before a call that would exceed a cap.

        Raises:
            RunFailedError: `usage_limit_exceeded`, naming the cap and the numbers.
        """
        for scope, budget, used in self._scopes():
            problem = budget_problem(budget, used, view.meta.estimated_tokens)
            if problem is not None:
                raise RunFailedError(
                    USAGE_LIMIT_EXCEEDED, f"usage_limits.{scope}.{problem}; the run ended before the call"
                )

    def details(self) -> str | None:
        """E.g. `usage 1,234/5,000 tokens, 2/10 calls · session usage $0.0123/$0.50`; None without caps."""
        parts: list[str] = []
        for scope, budget, used in self._scopes():
            shown: list[str] = []
            if budget.max_total_tokens is not None:
                shown.append(f"{used.total_tokens:,}/{budget.max_total_tokens:,} tokens")
            if budget.max_llm_calls is not None:
                shown.append(f"{used.llm_calls:,}/{budget.max_llm_calls:,} calls")
            if budget.max_cost_usd is not None:
                shown.append(f"${used.cost_usd:.4f}/${budget.max_cost_usd:g}")
            if shown:
                label = "usage" if scope == "per_request" else "session usage"
                parts.append(f"{label} {', '.join(shown)}")
        return " · ".join(parts) or None
