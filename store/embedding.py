"""Embeddings computed offline with wordllama (its wheel ships its weights), kept as portable bytes.

A vector is 256 float32 numbers, normalized, stored as 1 KiB of little-endian bytes (a SQLite
blob, a PostgreSQL `bytea`): no pgvector needed. Similarity is their dot product, computed in
Python over a search's candidates.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

VECTOR_DTYPE: Final = np.dtype("<f4")

_lock = threading.Lock()
_model: Any = None


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            import wordllama  # pyright: ignore[reportMissingTypeStubs]
            from wordllama import WordLlama  # pyright: ignore[reportMissingTypeStubs]

            _model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        return _model


def embed_now(texts: list[str]) -> list[bytes]:
    """The normalized vectors of `texts` as bytes (blocking: loads the model once per process)."""
    matrix: npt.NDArray[np.float32] = np.asarray(_load().embed(texts, norm=True), dtype=VECTOR_DTYPE)
    return [row.tobytes() for row in matrix]


async def embed(texts: list[str]) -> list[bytes]:
    """`embed_now` off the event loop."""
    return await asyncio.to_thread(embed_now, texts)


def similarities(query: bytes, vectors: list[bytes | None]) -> list[float]:
    """The cosine similarity of `query` and each vector (0 for a missing or malformed one)."""
    q = np.frombuffer(query, dtype=VECTOR_DTYPE)
    found: list[float] = []
    for vector in vectors:
        if vector is None or len(vector) != len(query):
            found.append(0.0)
            continue
        found.append(float(np.dot(q, np.frombuffer(vector, dtype=VECTOR_DTYPE))))
    return found
