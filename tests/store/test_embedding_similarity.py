"""`store.embedding.similarities`: one matrix product, a missing or malformed vector scoring 0 (pure)."""

from __future__ import annotations

import numpy as np

from store.embedding import VECTOR_DTYPE, similarities


def vector(*values: float) -> bytes:
    return np.asarray(values, dtype=VECTOR_DTYPE).tobytes()


def test_each_vector_scores_its_dot_product_and_a_bad_one_scores_zero() -> None:
    query = vector(0.6, 0.8, 0.0)
    found = similarities(
        query, [vector(0.6, 0.8, 0.0), None, vector(1.0, 0.0, 0.0), b"short", vector(0, 0, 1)]
    )
    assert [round(score, 6) for score in found] == [1.0, 0.0, 0.6, 0.0, 0.0]
    assert similarities(query, []) == [] and similarities(query, [None, b"x"]) == [0.0, 0.0]
