"""Named size limits of every public input, checked before the input can reach history.

Over a limit, the input is rejected with `payload_too_large` (the message names the
limit) and nothing changes. Characters are counted for text, UTF-8 bytes of the JSON
form for structured values. Payloads past the claim-check threshold (about 128 KiB)
are stored in the payload store and only referenced from history, so these limits
are about what a run can use, not about Temporal's 2 MB payload limit.
"""

from __future__ import annotations

from typing import Final

KIB: Final = 1024
MIB: Final = 1024 * KIB

MAX_QUERY_CHARS: Final = 100_000
"""A run's or an ask's query, and steer/inject `content`."""
MAX_SOURCE_CHARS: Final = 200
"""Steer/inject `source`."""
MAX_REFS: Final = 16
"""Entries in steer/inject `refs`."""
MAX_REF_KEY_CHARS: Final = 64
MAX_REF_VALUE_CHARS: Final = 1_000
MAX_ID_CHARS: Final = 200
"""Ids chosen by callers: `request_id`, `op_id`, `input_id`, `context_ref`, `expected_request_id`."""
MAX_REASON_CHARS: Final = 1_000
"""A cancel's `reason`."""
MAX_SYSTEM_PROMPT_CHARS: Final = 100_000
MAX_MODEL_CHARS: Final = 200
MAX_TOOLS: Final = 128
"""Tool names in one agent config."""
MAX_CONTEXT_BYTES: Final = 8 * MIB
"""A replace op's `result_context`, a run's starting `context`, a snapshot's context."""
MAX_META_BYTES: Final = 16 * KIB
"""A context op's `meta`."""
MAX_TOOL_CONTEXT_BYTES: Final = 64 * KIB
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
