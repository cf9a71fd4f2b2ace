"""The memory tools (`memory_save`, `memory_search`, `memory_delete`) and recall, as activities.

Each tool call's arguments are checked here (the model's mistakes come back as `invalid_arguments`
results it can correct). A save's write carries the call's idempotency key
(`activities.tools.tool_calls.idempotency_key`: the same on every retry of one call), so a
retried activity writes once; a save without a key is stored under one derived from it. A store
that does not answer is a tool error the model reads (`unavailable`, retryable), never a failed
run; recall then finds nothing and says why. The store is opened on first use, once per worker.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, JsonValue, ValidationError
from temporalio import activity

from activities.tools.tool_calls import idempotency_key
from contracts.activities import (
    MEMORY_DELETE_ACTIVITY,
    MEMORY_RECALL_ACTIVITY,
    MEMORY_SAVE_ACTIVITY,
    MEMORY_SEARCH_ACTIVITY,
)
from contracts.errors import INVALID_ARGUMENTS
from contracts.memory import (
    MemoryDeleteArguments,
    MemoryItem,
    MemoryRecall,
    MemoryRecalled,
    MemorySaveArguments,
    MemoryScope,
    MemorySearchArguments,
    MemoryToolCall,
)
from contracts.tools import ToolError, ToolOutcome
from store import MemoryStore, StoreError, StoreUnavailableError
from store.memory_store import backend_for
from store.settings import store_url

_ARGUMENTS_T = type[MemorySaveArguments] | type[MemorySearchArguments] | type[MemoryDeleteArguments]


def _namespace(scope: MemoryScope) -> tuple[str, str]:
    return scope.principal, scope.namespace


def _shown(item: MemoryItem) -> dict[str, JsonValue]:
    """What the model reads of an item: its key and text (and its score in a search)."""
    shown: dict[str, JsonValue] = {"key": item.key, "text": item.text}
    if item.score is not None:
        shown["score"] = item.score
    return shown


def _failed(error_type: str, message: str, *, retryable: bool = False) -> ToolOutcome:
    return ToolOutcome(ok=False, error=ToolError(type=error_type, message=message, retryable=retryable))


def _arguments(raw: str, model: _ARGUMENTS_T) -> BaseModel | ToolOutcome:
    try:
        value: Any = json.loads(raw) if raw.strip() else {}
        return model.model_validate(value)
    except json.JSONDecodeError as exc:
        return _failed(INVALID_ARGUMENTS, f"arguments are not valid JSON: {exc.msg}")
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return _failed(INVALID_ARGUMENTS, problems[:1_000])


class MemoryActivities:
    """The memory activities, on the store `url` names (default `REACT_STORE_URL`), opened on first use."""

    def __init__(self, url: str | None = None) -> None:
        """Bind the store's URL; nothing connects yet."""
        self._url = url
        self._store: MemoryStore | None = None
        self._opening = asyncio.Lock()

    async def store(self) -> MemoryStore:
        """The store, opened and migrated once (again after a failed open).

        Raises:
            StoreUnavailableError: the database did not answer.
        """
        async with self._opening:
            if self._store is None:
                opened = MemoryStore(backend_for(self._url or store_url()))
                try:
                    await opened.migrate()
                except BaseException:
                    await opened.close()
                    raise
                self._store = opened
            return self._store

    async def close(self) -> None:
        """Close the store, if open."""
        if self._store is not None:
            store, self._store = self._store, None
            await store.close()

    async def _tool(self, call: MemoryToolCall, model: _ARGUMENTS_T) -> ToolOutcome:
        arguments = _arguments(call.arguments, model)
        if isinstance(arguments, ToolOutcome):
            return arguments
        try:
            store = await self.store()
            assert isinstance(arguments, MemorySaveArguments | MemorySearchArguments | MemoryDeleteArguments)
            result = await self._apply(store, call.scope, arguments)
        except StoreUnavailableError as exc:
            return _failed(exc.code, f"memory is unavailable right now: {exc.message}", retryable=True)
        except StoreError as exc:
            return _failed(exc.code, exc.message)
        return ToolOutcome(ok=True, result=result, attempts=activity.info().attempt)

    async def _apply(
        self,
        store: MemoryStore,
        scope: MemoryScope,
        arguments: MemorySaveArguments | MemorySearchArguments | MemoryDeleteArguments,
    ) -> JsonValue:
        namespace = _namespace(scope)
        if isinstance(arguments, MemorySaveArguments):
            write_id = idempotency_key(activity.info())
            key = arguments.key or f"m-{write_id[:16]}"
            item = await store.put(namespace, key, arguments.text, write_id=write_id)
            return {"saved": item.key}
        if isinstance(arguments, MemorySearchArguments):
            found = await store.search(namespace, arguments.query, limit=arguments.limit)
            return {"items": [_shown(item) for item in found]}
        return {"deleted": await store.delete(namespace, arguments.key), "key": arguments.key}

    @activity.defn(name=MEMORY_SAVE_ACTIVITY)
    async def memory_save(self, call: MemoryToolCall) -> ToolOutcome:
        """Remember `{"text", "key"?}`; the result names the key (`{"saved": key}`)."""
        return await self._tool(call, MemorySaveArguments)

    @activity.defn(name=MEMORY_SEARCH_ACTIVITY)
    async def memory_search(self, call: MemoryToolCall) -> ToolOutcome:
        """Search `{"query", "limit"?}`; the result is `{"items": [{"key", "text", "score"}]}`, best first."""
        return await self._tool(call, MemorySearchArguments)

    @activity.defn(name=MEMORY_DELETE_ACTIVITY)
    async def memory_delete(self, call: MemoryToolCall) -> ToolOutcome:
        """Forget `{"key"}`; the result says whether it was there (`{"deleted": bool, "key"}`)."""
        return await self._tool(call, MemoryDeleteArguments)

    @activity.defn(name=MEMORY_RECALL_ACTIVITY)
    async def memory_recall(self, recall: MemoryRecall) -> MemoryRecalled:
        """The best memories for a run's ask; none, with the `problem`, when the store does not answer."""
        try:
            store = await self.store()
            found = await store.search(_namespace(recall.scope), recall.query, limit=recall.limit)
        except StoreError as exc:
            return MemoryRecalled(problem=f"{exc.code}: {exc.message}")
        return MemoryRecalled(items=[item.model_copy(update={"value": None}) for item in found])
