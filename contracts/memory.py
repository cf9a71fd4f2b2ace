"""Long-term memory: an agent's memory config, the id rules and bounds, items, the activities' payloads.

A memory item lives in a namespace: the principal who owns it, then the agent's memory
namespace (default the agent's name), then an optional path (`prefs`, `prefs/food`). Its
key is unique in its namespace. Every text, value, id, TTL and page has a bound here, so
what decodes is what the store (`store/`) may write; the store checks the same rules for
callers that do not go through these models (`store.items.check_namespace`, ...).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints

from contracts.bounds import json_size_at_most
from contracts.limits import MAX_ID_CHARS
from conversation.messages import OmitDefaults

SEGMENT_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""One part of a namespace (a principal, an agent's memory namespace, a path part)."""
KEY_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
"""A memory item's key."""
MAX_PATH_SEGMENTS: Final = 4
"""Parts of a namespace's optional path (after the principal and the agent's namespace)."""
MAX_MEMORY_TEXT_CHARS: Final = 4_000
"""An item's text: what is searched, and what recall shows the model."""
MAX_MEMORY_VALUE_BYTES: Final = 16 * 1024
"""An item's JSON value (UTF-8 bytes of its JSON form)."""
MIN_TTL_S: Final = 1
MAX_TTL_S: Final = 10 * 366 * 86_400
"""An item's time to live: one second to ten years."""
MAX_SEARCH_QUERY_CHARS: Final = 1_000
MAX_SEARCH_LIMIT: Final = 50
MAX_PAGE_SIZE: Final = 100
MAX_RECALL: Final = 10
MAX_MEMORY_ARGUMENTS_CHARS: Final = 2 * MAX_MEMORY_TEXT_CHARS
"""A memory tool call's arguments, as the model wrote them (JSON text)."""
MAX_RECALL_CHARS: Final = 8_000
"""The most text recall gives one run (a quarter of the context policy's input budget, if smaller)."""

LOCAL_PRINCIPAL: Final = "local"
"""The owner of memories written by runs the gateway did not start (their ids are not `gw/...`)."""
DEFAULT_MEMORY_NAMESPACE: Final = "default"
"""An agent's memory namespace when its config names none and its run id names no agent."""

Segment = Annotated[str, StringConstraints(pattern=SEGMENT_PATTERN.pattern)]
Key = Annotated[str, StringConstraints(pattern=KEY_PATTERN.pattern)]
MemoryText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_MEMORY_TEXT_CHARS)]
MemoryValue = Annotated[JsonValue, json_size_at_most(MAX_MEMORY_VALUE_BYTES, "value")]
TtlSeconds = Annotated[int, Field(ge=MIN_TTL_S, le=MAX_TTL_S)]


class MemoryConfig(OmitDefaults):
    """An agent's memory (`AgentConfig.memory`; off while unset).

    `tools` offers `memory_save`, `memory_search` and `memory_delete` to the model; `recall`
    is how many memories each run is given before its first LLM call (0: none); `namespace`
    is the agent's memory namespace (default: the agent's name), so two agents may share one.
    """

    model_config = ConfigDict(extra="forbid")

    tools: bool = True
    recall: Annotated[int, Field(ge=0, le=MAX_RECALL)] = 3
    namespace: Segment | None = None


class MemoryItem(BaseModel):
    """One remembered item, as every surface shows it (`expires_at` only when it has a TTL)."""

    key: str
    text: str
    value: JsonValue = None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    score: float | None = None
    """A search's rank of the item (higher is better); None outside a search."""


class MemoryScope(BaseModel):
    """Whose memory an activity reads or writes: the owner and the agent's namespace.

    The run derives it from its workflow id (`memory_scope`), never from anything a caller sends.
    """

    principal: Segment
    namespace: Segment


class MemorySaveArguments(BaseModel):
    """`memory_save`'s arguments: remember `text` under `key` (default: one derived from the call)."""

    model_config = ConfigDict(extra="forbid")

    text: MemoryText
    key: Key | None = None


class MemorySearchArguments(BaseModel):
    """`memory_search`'s arguments: the `limit` best items for `query`."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_SEARCH_QUERY_CHARS)]
    limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT)] = 5


class MemoryDeleteArguments(BaseModel):
    """`memory_delete`'s arguments: forget the item `key`."""

    model_config = ConfigDict(extra="forbid")

    key: Key


class MemoryToolCall(BaseModel):
    """One call of a memory tool: whose memory, and the model's arguments as it wrote them."""

    scope: MemoryScope
    call_id: Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)]
    arguments: Annotated[str, StringConstraints(max_length=MAX_MEMORY_ARGUMENTS_CHARS)]


class MemoryRecall(BaseModel):
    """Recall: the `limit` best memories for a run's ask (the ask cut to `MAX_SEARCH_QUERY_CHARS`)."""

    scope: MemoryScope
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_SEARCH_QUERY_CHARS)]
    limit: Annotated[int, Field(ge=1, le=MAX_RECALL)]


class MemoryRecalled(BaseModel):
    """What recall found, best first, or why it found nothing (`problem`: the store did not answer)."""

    items: Annotated[list[MemoryItem], Field(max_length=MAX_RECALL)] = []
    problem: str | None = None


_GATEWAY_ID: Final = re.compile(r"^gw/(?P<principal>[A-Za-z0-9_.-]{1,32})/(?P<agent>[A-Za-z0-9_-]{1,32})/")


def workflow_owner(workflow_id: str) -> tuple[str, str | None]:
    """(principal, agent) a workflow id names: a gateway session's (and its runs'), else (`local`, None).

    A gateway session's id is `gw/<principal>/<agent>/<thread>`; its runs, and the agents they
    call, have ids that start with it. Memory (`memory_scope`) and usage (`contracts.usage`)
    both take the owner from here.
    """
    found = _GATEWAY_ID.match(workflow_id)
    return (found["principal"], found["agent"]) if found else (LOCAL_PRINCIPAL, None)


def memory_scope(workflow_id: str, config: MemoryConfig) -> MemoryScope:
    """The scope of a run's memory: the owner named by a gateway session's id, else `local`.

    Every run of a principal's thread writes the principal's memory (`workflow_owner`). The
    namespace is the config's, else the agent's name, else `default`.
    """
    principal, agent = workflow_owner(workflow_id)
    namespace = config.namespace or agent or DEFAULT_MEMORY_NAMESPACE
    return MemoryScope(principal=principal, namespace=namespace)
