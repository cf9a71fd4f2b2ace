"""The scenarios `scripts/record_histories.py` records, in order, and what each one's histories must show.

The runs' scenarios (`scripts.replay_run_scenarios`) register first, then the sessions'
(`scripts.replay_session_scenarios`), then `cache_miss`, which replaces the worker. To add
one: an `async def my_case(lab: Lab) -> list[str]` with `@scenario(...)` in the module of
its kind (`scripts._replay_registry` says what a scenario is).
"""

from __future__ import annotations

from scripts import replay_run_scenarios, replay_session_scenarios
from scripts._replay_lab import Lab
from scripts._replay_registry import REQUIRED, SCENARIOS, scenario, slow

__all__ = ["REQUIRED", "SCENARIOS", "replay_run_scenarios", "replay_session_scenarios"]


@scenario("activity_failed:message_cache_miss")  # last: it replaces the worker
async def cache_miss(lab: Lab) -> list[str]:
    """The next LLM call reaches a worker whose message cache never saw the run: resent inline."""
    handle = await lab.start_run(
        "cache-miss", "Miss the cache.", [slow(1.5, "s1"), {"content": "Resent inline."}]
    )
    await lab.until_tool_runs(handle.id)
    await lab.stop_worker()  # the tool finishes on the old worker first
    await lab.start_worker()
    await handle.result()
    return [handle.id]
