"""The live channel: where a run's live events go when a deployment names one (`REACT_LIVE_URL`).

Without a channel, followers poll each run's Workflow Stream (by Update, then by query), and
each poll Update is history. With one (a Redis server: `REACT_LIVE_URL=redis://host:6379/0`),
the worker writes every item the run's stream accepts, trace items and deltas, in the run's
own order, to the run's entry in the channel (`live:<workflow id>`), and followers read it
from there: no Update, no query, no history. The run's Workflow Stream stays as it is (the
run still holds the in-flight call's partial answer for an interrupting steer), so a follower
without the channel, or one whose channel missed items, reads the durable truth as before
(`clients.stream`). Offsets are the channel's entry ids (Redis Streams ids, `<ms>-<n>`),
durable while the entry lives (`live.redis_channel`: 24 hours after its last write, at most
20,000 items).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

LIVE_URL_ENV = "REACT_LIVE_URL"
"""The variable that names the live channel (unset or empty: none; followers poll the run)."""
START = "0"
"""The offset before a run's first item."""


class LiveChannelError(ValueError):
    """The live channel's setting names nothing this product can use."""


class LiveChannel(Protocol):
    """Publishes runs' live items and reads them back from a durable offset."""

    async def publish(self, items: Mapping[str, list[bytes]]) -> None:
        """Append each run's items ({workflow id: [a `StreamEvent`'s JSON, ...]}), in order, to its entry."""
        ...

    async def read(self, workflow_id: str, after: str, wait_s: float) -> list[tuple[str, bytes]]:
        """The items after offset `after` (`START`: from the first), waiting up to `wait_s` for one.

        Returns (offset, JSON) pairs, oldest first; empty when none came in time.
        """
        ...

    async def exists(self, workflow_id: str) -> bool:
        """Whether the run has an entry (anything was published for it)."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


def live_url(environ: dict[str, str] | None = None) -> str | None:
    """The live channel's URL from the environment (None: no channel).

    Raises:
        LiveChannelError: the URL's scheme is not `redis://` or `rediss://`.
    """
    value = ((environ if environ is not None else os.environ).get(LIVE_URL_ENV) or "").strip()
    if not value:
        return None
    if not value.startswith(("redis://", "rediss://")):
        raise LiveChannelError(
            f"{LIVE_URL_ENV} must be a redis:// or rediss:// URL, not {value.split(':')[0]!r}"
        )
    return value


def open_channel(url: str) -> LiveChannel:
    """The channel `url` names (a Redis server; the connection opens on first use)."""
    from live.redis_channel import RedisLiveChannel

    return RedisLiveChannel(url)
