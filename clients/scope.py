"""What a client of runs or sessions is configured with: timeouts, the payload store, the Temporal client.

`Runs` and `Sessions` are `ClientScope`s; their handles share its `Timeouts` and `StoreReader`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client

from contracts import TASK_QUEUE, Segment, SegmentRef
from payloads.blob_store import BlobStore, blob_store_from_env


@dataclass(frozen=True)
class Timeouts:
    """How long the client waits for the server.

    Attributes:
        query: each query, asked again once when it times out (a query needs a worker: without one
            it fails after twice this long).
        control: each acknowledging Update (steer, cancel, context ops, config controls) and each ask.
        work: Updates that run an activity before they answer (`compact` calls the model, `export`
            signs a snapshot, `register_tool` asks the worker).
    """

    query: timedelta = timedelta(seconds=10)
    control: timedelta = timedelta(seconds=30)
    work: timedelta = timedelta(minutes=5)


class StoreReader:
    """Reads archived thread segments from the payload store (opened on first use)."""

    def __init__(self, store: BlobStore | None) -> None:
        """Use `store` (default: the one `REACT_PAYLOAD_STORE` names, decrypting when keys are set)."""
        self._store = store
        self._last: tuple[str, Segment] | None = None

    async def segment(self, ref: SegmentRef) -> Segment:
        """The segment `ref` names (the last one read is kept, for paging through it).

        Raises:
            BlobMissingError: the store does not hold it (check `REACT_PAYLOAD_STORE`).
        """
        if self._last is not None and self._last[0] == ref.digest:
            return self._last[1]
        store = self.blobs()
        segment = Segment.model_validate_json(await store.get(ref.digest))
        self._last = (ref.digest, segment)
        return segment

    def blobs(self) -> BlobStore:
        """The payload store itself (for writing attachments' bytes: `clients.session_attachments`)."""
        store = self._store = self._store or blob_store_from_env()
        return store


class ClientScope:
    """What `Runs` and `Sessions` share: the Temporal client, the task queue, timeouts and the store."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = TASK_QUEUE,
        store: BlobStore | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        """Use `client` (from `connect()`, so payloads use the product's converter and payload store).

        Args:
            client: a Temporal client built by `client.connect()`.
            task_queue: the workers' task queue.
            store: the payload store (default: the one `REACT_PAYLOAD_STORE` names).
            timeouts: how long queries and acknowledging Updates may take.
        """
        self._client = client
        self._task_queue = task_queue
        self._timeouts = timeouts or Timeouts()
        self._store = StoreReader(store)
