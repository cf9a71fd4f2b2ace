"""The LLM activity's message cache: every message it is sent or produces, by content digest.

Messages live in the payload store (`payloads.blob_store`), so every worker that
shares the store shares the cache; a bounded in-process map saves re-reading them.
`resolve` turns an `LLMRequest`'s prefix and references back into messages, stores
the inline ones and the call's message list (so the next call can name it), and
raises the non-retryable `message_cache_miss` when something referenced is gone:
the workflow then resends the call inline.
"""

from __future__ import annotations

from collections import OrderedDict

from temporalio.exceptions import ApplicationError

from contracts import LLMRequest, MessageRef
from contracts.errors import MESSAGE_CACHE_MISS
from conversation import Message
from conversation.digest import list_bytes, list_digest, message_bytes, message_digest
from payloads.blob_store import BlobMissingError, BlobStore

MEMORY_BYTES = 64 * 1024 * 1024
"""Bytes of messages and lists kept in memory (least recently used are forgotten first).

A message in memory is also kept parsed (a referenced message is not parsed again for
every call that names it), so the process holds about twice this much at most."""


class MessageCache:
    """Messages and message lists by digest, in the payload store and a bounded in-memory map."""

    def __init__(self, store: BlobStore, memory_bytes: int = MEMORY_BYTES) -> None:
        """Cache into `store`."""
        self._store = store
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._parsed: dict[str, Message] = {}
        self._memory_bytes = 0
        self._limit = memory_bytes

    @property
    def store(self) -> BlobStore:
        """The payload store the cache writes through (attachments' bytes are read from it too)."""
        return self._store

    async def resolve(self, request: LLMRequest) -> list[Message]:
        """The request's whole message list; caches its inline messages and the list itself.

        Raises:
            ApplicationError: non-retryable `message_cache_miss`, naming what is missing.
        """
        messages: list[Message] = []
        digests: list[str] = []
        if request.prefix is not None:
            prefix = request.prefix
            listed = (await self._get(prefix.digest, "message list")).decode().split("\n")
            chosen = listed[prefix.start : prefix.start + prefix.count]
            if len(chosen) != prefix.count:
                end = prefix.start + prefix.count
                raise _miss(f"message list {prefix.digest} has no messages {prefix.start}..{end}")
            for digest in chosen:
                messages.append(await self._message(digest))
                digests.append(digest)
        for item in request.messages:
            if isinstance(item, MessageRef):
                message = await self._message(item.ref)
                if message.role != item.role:
                    raise _miss(f"message {item.ref} has role {message.role}, the reference says {item.role}")
                messages.append(message)
                digests.append(item.ref)
            else:
                digests.append(await self.remember(item))
                messages.append(item)
        await self._put(list_digest(digests), list_bytes(digests))
        return messages

    async def remember(self, message: Message) -> str:
        """Cache one message (idempotent); return its digest."""
        digest = message_digest(message)
        await self._put(digest, message_bytes(message))
        self._parsed[digest] = message  # messages are immutable: the caller's object can be shared
        return digest

    async def _message(self, digest: str) -> Message:
        parsed = self._parsed.get(digest)
        if parsed is not None:
            self._memory.move_to_end(digest)
            return parsed
        message = Message.model_validate_json(await self._get(digest, "message"))
        self._parsed[digest] = message
        return message

    async def _get(self, digest: str, what: str) -> bytes:
        data = self._memory.get(digest)
        if data is not None:
            self._memory.move_to_end(digest)
            return data
        try:
            data = await self._store.get(digest)
        except BlobMissingError as err:
            raise _miss(f"{what} {digest} is not in the cache ({err})") from None
        self._keep(digest, data)
        return data

    async def _put(self, digest: str, data: bytes) -> None:
        if digest in self._memory:
            self._memory.move_to_end(digest)
            return
        await self._store.put(data, durable=False)  # a lost cache entry only costs a cache miss
        self._keep(digest, data)

    def _keep(self, digest: str, data: bytes) -> None:
        self._memory[digest] = data
        self._memory_bytes += len(data)
        while self._memory_bytes > self._limit and len(self._memory) > 1:
            forgotten, dropped = self._memory.popitem(last=False)
            self._memory_bytes -= len(dropped)
            self._parsed.pop(forgotten, None)


def _miss(message: str) -> ApplicationError:
    return ApplicationError(message, type=MESSAGE_CACHE_MISS, non_retryable=True)
