"""Named size limits of every public input, checked before the input can reach history.

Over a limit, the input is rejected with `payload_too_large` (the message names the
limit) and nothing changes. Characters are counted for text, UTF-8 bytes of the JSON
form for structured values. Payloads past the claim-check threshold (about 128 KiB)
are stored in the payload store and only referenced from history, so these limits
are about what a run can use, not about Temporal's 2 MB payload limit.
"""

from __future__ import annotations

from typing import Final

from conversation.bounds import KIB, MAX_CONTEXT_BYTES, MAX_ID_CHARS, MAX_META_BYTES, MIB

__all__ = [
    "KIB",
    "MAX_AGENTS",
    "MAX_AGENT_DEPTH",
    "MAX_AGENT_RUNS",
    "MAX_APPROVER_CHARS",
    "MAX_CONTEXT_BYTES",
    "MAX_EDITED_ARGUMENTS_BYTES",
    "MAX_EXTRA_SETTINGS_BYTES",
    "MAX_ID_CHARS",
    "MAX_ITERATIONS",
    "MAX_META_BYTES",
    "MAX_MODEL_CHARS",
    "MAX_OVERRIDES_BYTES",
    "MAX_PARTIAL_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUEUED_INPUTS",
    "MAX_REASON_CHARS",
    "MAX_REFS",
    "MAX_REF_KEY_CHARS",
    "MAX_REF_VALUE_CHARS",
    "MAX_SCRIPT_BYTES",
    "MAX_SNAPSHOT_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_STREAMED_BYTES_PER_CALL",
    "MAX_STREAMED_BYTES_PER_RUN",
    "MAX_SYSTEM_PROMPT_CHARS",
    "MAX_TOOLS",
    "MAX_TOOL_CONTEXT_BYTES",
    "MIB",
]

MAX_QUERY_CHARS: Final = 100_000
"""A run's or an ask's query, and steer/inject `content`."""
MAX_SOURCE_CHARS: Final = 200
"""Steer/inject `source`."""
MAX_REFS: Final = 16
"""Entries in steer/inject `refs`."""
MAX_REF_KEY_CHARS: Final = 64
MAX_REF_VALUE_CHARS: Final = 1_000
MAX_REASON_CHARS: Final = 1_000
"""A cancel's `reason`."""
MAX_SYSTEM_PROMPT_CHARS: Final = 100_000
MAX_MODEL_CHARS: Final = 200
MAX_TOOLS: Final = 128
"""Tool names in one agent config."""
MAX_TOOL_CONTEXT_BYTES: Final = 64 * KIB
MAX_AGENTS: Final = 16
"""Agents offered as tools in one agent config."""
MAX_AGENT_DEPTH: Final = 8
"""The largest `max_agent_depth`: how deep agents may call agents."""
MAX_AGENT_RUNS: Final = 1_000
"""The largest `max_agent_runs`: agent runs one run's whole tree of agents may start."""
MAX_APPROVER_CHARS: Final = 200
"""An approval's `approver`."""
MAX_EDITED_ARGUMENTS_BYTES: Final = 64 * KIB
"""Arguments an approval edits."""
MAX_OVERRIDES_BYTES: Final = 256 * KIB
"""An ask's `overrides`."""
MAX_SCRIPT_BYTES: Final = 8 * MIB
"""The scripted model's `script`."""
MAX_EXTRA_SETTINGS_BYTES: Final = 64 * KIB
"""`model_settings.extra`."""
MAX_SNAPSHOT_CHARS: Final = 12 * MIB
"""A snapshot token."""

MAX_QUEUED_INPUTS: Final = 64
"""Steer/inject inputs a run holds before draining them."""
MAX_ITERATIONS: Final = 1_000
"""The largest `max_iterations` a config may set."""

DEFAULT_STREAM_INTERVAL_S: Final = 0.1
"""How long the LLM activity gathers fragments before publishing them (the first goes at once).

Chosen from `bench/live.py`'s batch-interval table (README, "Performance")."""
DEFAULT_POLL_UPDATES: Final = 1_000
"""Stream polls a run answers by Update (`AgentConfig.stream_poll_updates`); past them followers poll by
query. Temporal refuses every Update of a run past 2,000: the other 1,000 stay for steer, approve, cancel."""
MAX_STREAMED_BYTES_PER_CALL: Final = 1 * MIB
"""UTF-8 bytes of text, thinking and tool-call arguments one LLM call streams (the rest arrives whole)."""
MAX_PARTIAL_CHARS: Final = 1_000_000
"""The most of a call's streamed text a run keeps for an interrupted entry (the rest is cut)."""
MAX_STREAMED_BYTES_PER_RUN: Final = 4 * MIB
"""The same over a run's calls: each streamed byte costs about 1.4 bytes of history per copy (the
publish signal, and each poll Update that carries it), so a run's stream stays far from the 50 MiB limit."""

MAX_QUEUED_ASKS: Final = 16
"""How many asks a busy session holds with `on_busy="enqueue"` (a bounded FIFO)."""
