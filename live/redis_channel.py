"""The live channel on Redis Streams: a stream per run (`XADD` with trimming and a TTL, `XREAD`).

A call's delta batches go through one Lua script each (atomic in Redis): refused once the
call is cut, else appended to the run's stream and folded into the call's text (the run's
`live:<workflow id>:calls` hash: `a:<n>`, the call's latest attempt, `t:<n>` its text, `c:<n>`
its cut mark). `cut_call` marks the call cut and reads its fields in one script, so no batch
lands after the text it answers.

A run's two keys live `LIVE_TTL_S` after its last write while it runs, and `LIVE_CLOSED_TTL_S`
once the item that ends it is written (`publish(..., closed=...)`): long enough for a follower
a little late to catch up from the channel; a later one reads the run's durable truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any, cast

from redis.asyncio import Redis

from live.calls import CutCall, LiveDelta
from live.skipped import SkippedEntries

FIELD = b"d"
LIVE_TTL_S = 24 * 3600
"""How long a running run's entry lives after its last write (a run that never closes: a worker lost)."""
LIVE_CLOSED_TTL_S = 300
"""How long a run's entry lives once the item that ends it is written: late followers catch up."""
LIVE_MAX_ITEMS = 20_000
"""The most items a run's entry keeps (the oldest go first; approximate, as Redis trims)."""

_PUBLISH_DELTA = """
local call = ARGV[6]
if redis.call('HGET', KEYS[2], 'c:' .. call) then return 0 end
local attempt = tonumber(ARGV[2])
local known = tonumber(redis.call('HGET', KEYS[2], 'a:' .. call) or '-1')
if attempt > known then
  redis.call('HSET', KEYS[2], 'a:' .. call, attempt, 't:' .. call, ARGV[3])
elseif attempt == known then
  redis.call('HSET', KEYS[2], 't:' .. call, (redis.call('HGET', KEYS[2], 't:' .. call) or '') .. ARGV[3])
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], '*', 'd', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1
"""
_CUT_CALL = """
local call = ARGV[2]
redis.call('HSET', KEYS[1], 'c:' .. call, '1')
redis.call('EXPIRE', KEYS[1], ARGV[1])
return redis.call('HMGET', KEYS[1], 'a:' .. call, 't:' .. call)
"""


def key_of(workflow_id: str) -> str:
    """The channel's key for a run (`live:<workflow id>`)."""
    return f"live:{workflow_id}"


def calls_key_of(workflow_id: str) -> str:
    """The key of the run's LLM calls' texts and cut marks (one hash per run)."""
    return f"live:{workflow_id}:calls"


class RedisLiveChannel:
    """A `LiveChannel` on one Redis server (`redis://host:port/db`)."""

    def __init__(self, url: str) -> None:
        """Connect lazily to the server `url` names."""
        self._redis: Redis = Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
        self._publish_delta = self._redis.register_script(_PUBLISH_DELTA)  # pyright: ignore[reportUnknownMemberType]
        self._cut_call = self._redis.register_script(_CUT_CALL)  # pyright: ignore[reportUnknownMemberType]
        self.skipped = SkippedEntries()

    async def publish(self, items: Mapping[str, list[bytes]], closed: AbstractSet[str] = frozenset()) -> None:
        """Append every run's items in one round trip, trim each to `LIVE_MAX_ITEMS`, refresh its TTL.

        The runs in `closed` have ended (their last item is among theirs): their keys expire
        `LIVE_CLOSED_TTL_S` from now.
        """
        if not any(items.values()) and not closed:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for workflow_id, run_items in items.items():
                key = key_of(workflow_id)
                for item in run_items:
                    pipe.xadd(key, {FIELD: item}, maxlen=LIVE_MAX_ITEMS, approximate=True)
                if workflow_id not in closed:
                    pipe.expire(key, LIVE_TTL_S)
            for workflow_id in closed:
                pipe.expire(key_of(workflow_id), LIVE_CLOSED_TTL_S)
                pipe.expire(calls_key_of(workflow_id), LIVE_CLOSED_TTL_S)
            await pipe.execute()

    async def publish_delta(self, workflow_id: str, delta: LiveDelta) -> bool:
        """One script: refused when the call is cut, else appended and folded into the call's text."""
        keys = [key_of(workflow_id), calls_key_of(workflow_id)]
        args: list[Any] = [
            delta.item,
            delta.attempt,
            delta.text.encode(),
            LIVE_MAX_ITEMS,
            LIVE_TTL_S,
            delta.call,
        ]
        answer: Any = await self._publish_delta(keys=keys, args=args)
        return bool(answer)

    async def cut_call(self, workflow_id: str, call: int) -> CutCall:
        """One script: mark the call cut and read its latest attempt's text."""
        answer: Any = await self._cut_call(keys=[calls_key_of(workflow_id)], args=[LIVE_TTL_S, call])
        attempt, text = cast(list[bytes | None], answer)
        return CutCall(
            attempt=int(attempt) if attempt is not None else 0,
            text=text.decode(errors="replace") if text is not None else "",
        )

    async def read(self, workflow_id: str, after: str, wait_s: float) -> list[tuple[str, bytes]]:
        """`XREAD BLOCK` from `after`; an entry without its data field comes with empty data (counted)."""
        block = max(1, int(wait_s * 1000))
        answer: Any = await self._redis.xread({key_of(workflow_id): after}, block=block, count=1000)
        streams = cast(list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]], answer or [])
        found: list[tuple[str, bytes]] = []
        for _key, entries in streams:
            for entry_id, fields in entries:
                data = fields.get(FIELD)
                if data is None:  # kept, empty, so the reader's offset moves past it
                    self.skipped.skip(workflow_id, entry_id.decode(), "no data field")
                found.append((entry_id.decode(), data or b""))
        return found

    async def exists(self, workflow_id: str) -> bool:
        """`EXISTS` on the run's key."""
        return bool(await self._redis.exists(key_of(workflow_id)))

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
