"""The live channel: where a run's live events go when a deployment has one.

A deployment names it (`REACT_LIVE_URL`), or the embedded dev server has one beside it (a
`redis-server` it found or started: `live.dev_channel`).

Without a channel, followers poll each run's Workflow Stream (by Update, then by query), and
each poll Update is history; the LLM activity sends its delta batches to the run by signal.
With one (a Redis server: `REACT_LIVE_URL=redis://host:6379/0`), a run's live items go to its
entry in the channel (`live:<workflow id>`) and followers read them from there: no Update, no
query, no signal, no history. Two writers share the entry, in one order (the channel's):

- the worker writes every trace item the run records (`hosting.live_sink`, from the workflow);
- the LLM activity writes its call's delta batches itself (`publish_delta`), so tokens never
  touch the run's history. The channel also folds each call's text (its latest attempt's), and
  an interrupting steer cuts the call (`cut_call`): the channel refuses that call's later
  batches and answers its text, which the run records as the `interrupted` entry, so the entry
  is exactly what followers saw.

A follower without the channel, or one whose channel missed items, reads the durable truth
(`clients.stream`: trace events and, for the text, each call's message in the thread). Offsets
are the channel's entry ids (Redis Streams ids, `<ms>-<n>`), durable while the entry lives
(`live.redis_channel`: 24 hours after its last write while the run runs, 5 minutes once the
item that ends it is written; at most 20,000 items).

An entry a reader cannot use (no data field, or data that is not a stream event: anything else
wrote to the key) is skipped and counted (`LiveChannel.skipped`, and a log line), never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Protocol

from live.calls import CutCall, LiveDelta
from live.skipped import SkippedEntries
from settings.env_values import SettingsError, value

LIVE_URL_ENV = "REACT_LIVE_URL"
"""The variable that names the live channel (`off`: none; unset or empty: the dev server's, if any:
`live.dev_channel`; without one, followers poll the run)."""
LIVE_OFF = "off"
"""The value of `REACT_LIVE_URL` that turns the channel off, the dev server's included."""
START = "0"
"""The offset before a run's first item."""


class LiveChannel(Protocol):
    """Publishes runs' live items and reads them back from a durable offset."""

    skipped: SkippedEntries
    """The entries its readers skipped (no data, or data that is not a stream event)."""

    async def publish(self, items: Mapping[str, list[bytes]], closed: AbstractSet[str] = frozenset()) -> None:
        """Append each run's items ({workflow id: [a `StreamEvent`'s JSON, ...]}), in order, to its entry.

        The runs in `closed` have ended: their entries are kept only a short grace from now.
        """
        ...

    async def publish_delta(self, workflow_id: str, delta: LiveDelta) -> bool:
        """Append one LLM call's delta batch to the run's entry, unless the call has been cut.

        Returns False (and appends nothing) when `cut_call` has closed the call.
        """
        ...

    async def cut_call(self, workflow_id: str, call: int) -> CutCall:
        """Close LLM call `call` of the run to further deltas; what its latest attempt had published."""
        ...

    async def read(self, workflow_id: str, after: str, wait_s: float) -> list[tuple[str, bytes]]:
        """The items after offset `after` (`START`: from the first), waiting up to `wait_s` for one.

        Returns (offset, JSON) pairs, oldest first; empty when none came in time. An entry
        without data comes with empty JSON (counted in `skipped`): the reader skips it.
        """
        ...

    async def exists(self, workflow_id: str) -> bool:
        """Whether the run has an entry (anything was published for it)."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


def live_url(environ: dict[str, str] | None = None) -> str | None:
    """The live channel's URL `REACT_LIVE_URL` names (None: unset, empty or `off`).

    Raises:
        SettingsError: the value is neither `off` nor a `redis://` or `rediss://` URL.
    """
    url = value(os.environ if environ is None else environ, LIVE_URL_ENV)
    if url is None or url.lower() == LIVE_OFF:
        return None
    if not url.startswith(("redis://", "rediss://")):
        raise SettingsError(
            LIVE_URL_ENV,
            f"{LIVE_URL_ENV} must be a redis:// or rediss:// URL (or {LIVE_OFF}), not {url.split(':')[0]!r}",
            sentence=True,
        )
    return url


def open_channel(url: str) -> LiveChannel:
    """The channel `url` names (a Redis server; the connection opens on first use)."""
    from live.redis_channel import RedisLiveChannel

    return RedisLiveChannel(url)
