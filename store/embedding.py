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
    """The cosine similarity of `query` and each vector (0 for a missing or malformed one).

    One matrix product over the well-formed vectors (a search compares hundreds).
    """
    found = [0.0] * len(vectors)
    kept = [i for i, vector in enumerate(vectors) if vector is not None and len(vector) == len(query)]
    if not kept:
        return found
    q = np.frombuffer(query, dtype=VECTOR_DTYPE)
    rows = np.frombuffer(b"".join(vectors[i] or b"" for i in kept), dtype=VECTOR_DTYPE).reshape(len(kept), -1)
    for i, score in zip(kept, (rows @ q).tolist(), strict=True):
        found[i] = float(score)
    return found
