"""The store's tests run on both real databases: `store_url` is a fresh store on each backend."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.postgres_server import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store's URL on each backend (SQLite in `tmp_path`; a new database of the test PostgreSQL)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    server: str = request.getfixturevalue("postgres_url")
    return fresh_database(server, f"t_{uuid.uuid4().hex[:12]}")
