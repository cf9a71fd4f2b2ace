"""The live channel on Redis Streams: a stream per run (`XADD` with trimming and a TTL, `XREAD`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from redis.asyncio import Redis

FIELD = b"d"
LIVE_TTL_S = 24 * 3600
"""How long a run's entry lives after its last write."""
LIVE_MAX_ITEMS = 20_000
"""The most items a run's entry keeps (the oldest go first; approximate, as Redis trims)."""


def key_of(workflow_id: str) -> str:
    """The channel's key for a run (`live:<workflow id>`)."""
    return f"live:{workflow_id}"


class RedisLiveChannel:
    """A `LiveChannel` on one Redis server (`redis://host:port/db`)."""

    def __init__(self, url: str) -> None:
        """Connect lazily to the server `url` names."""
        self._redis: Redis = Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]

    async def publish(self, items: Mapping[str, list[bytes]]) -> None:
        """Append every run's items in one round trip, trim each to `LIVE_MAX_ITEMS`, refresh its TTL."""
        if not any(items.values()):
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for workflow_id, run_items in items.items():
                key = key_of(workflow_id)
                for item in run_items:
                    pipe.xadd(key, {FIELD: item}, maxlen=LIVE_MAX_ITEMS, approximate=True)
                pipe.expire(key, LIVE_TTL_S)
            await pipe.execute()

    async def read(self, workflow_id: str, after: str, wait_s: float) -> list[tuple[str, bytes]]:
        """`XREAD BLOCK` from `after`."""
        block = max(1, int(wait_s * 1000))
        answer: Any = await self._redis.xread({key_of(workflow_id): after}, block=block, count=1000)
        streams = cast(list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]], answer or [])
        return [
            (entry_id.decode(), fields[FIELD]) for _key, entries in streams for entry_id, fields in entries
        ]

    async def exists(self, workflow_id: str) -> bool:
        """`EXISTS` on the run's key."""
        return bool(await self._redis.exists(key_of(workflow_id)))

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
