r"""Id patterns shared by the layers, and the one way every id is checked: the whole string.

Python's `$` also matches just before a trailing newline, so `re.match(r"^[a-z]+$", "alice\n")`
matches: an id checked that way could carry a newline into workflow ids, logs and URLs. Every
id check (principals, schedule names and owners, request ids, thread ids, agent names, tool
names, message ids, server and module names) uses `Pattern.fullmatch`, never `match`; the
patterns keep their `^...$` text, which the refusals quote. A pattern two layers check is here.
"""

from __future__ import annotations

import re
from typing import Final

PRINCIPAL_PATTERN: Final = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
"""What a principal's name may be (it names the owner in workflow ids: a session's, a schedule's)."""
TOOL_NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool names providers accept."""
AGENT_NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
"""What an agent's name may be (it names the agent in a session's workflow id: `gateway.owners`)."""
