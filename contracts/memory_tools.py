"""The memory tools as the model sees them: `memory_save`, `memory_search`, `memory_delete`."""

from __future__ import annotations

from typing import Final

from contracts.llm import ToolSpec
from contracts.memory import KEY_PATTERN, MAX_MEMORY_TEXT_CHARS, MAX_SEARCH_LIMIT, MAX_SEARCH_QUERY_CHARS

MEMORY_SAVE_TOOL: Final = "memory_save"
MEMORY_SEARCH_TOOL: Final = "memory_search"
MEMORY_DELETE_TOOL: Final = "memory_delete"

MEMORY_TOOL_SPECS: Final = (
    ToolSpec(
        name=MEMORY_SAVE_TOOL,
        description=(
            "Remember a fact for later conversations (a preference, a name, a decision). "
            "Give a short key to overwrite an earlier memory of the same thing."
        ),
        parameters={
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": MAX_MEMORY_TEXT_CHARS},
                "key": {"type": "string", "pattern": KEY_PATTERN.pattern},
            },
            "required": ["text"],
        },
    ),
    ToolSpec(
        name=MEMORY_SEARCH_TOOL,
        description="Search what you remember from earlier conversations; the best matches first.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": MAX_SEARCH_QUERY_CHARS},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT},
            },
            "required": ["query"],
        },
    ),
    ToolSpec(
        name=MEMORY_DELETE_TOOL,
        description="Forget a memory, by the key memory_save or memory_search gave it.",
        parameters={
            "type": "object",
            "properties": {"key": {"type": "string", "pattern": KEY_PATTERN.pattern}},
            "required": ["key"],
        },
    ),
)
"""The memory tools as the model sees them."""
MEMORY_TOOLS: Final = frozenset(spec.name for spec in MEMORY_TOOL_SPECS)
