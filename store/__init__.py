"""The long-term store: what lives across conversations (memory items), on SQLite or PostgreSQL.

Temporal stays the truth for conversations; the store holds what outlives them. `open_store`
opens the one `REACT_STORE_URL` names (`store.settings`); `MemoryStore` is the one async
interface over both databases (`store.sqlite_backend`, `store.postgres_backend`).
"""

from store.errors import StoreError, StoreInputError, StoreUnavailableError
from store.memory_store import MemoryPage, MemoryStore, open_store
from store.settings import DEFAULT_STORE_PATH, store_url

__all__ = [
    "DEFAULT_STORE_PATH",
    "MemoryPage",
    "MemoryStore",
    "StoreError",
    "StoreInputError",
    "StoreUnavailableError",
    "open_store",
    "store_url",
]
