"""Which database the store is: `REACT_STORE_URL`, default a SQLite file beside the dev server's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

DEFAULT_STORE_PATH: Final = Path(".temporal") / "store.db"
"""Beside the dev server's `.temporal/dev.db` (`hosting.dev_server.DEFAULT_DB`)."""
STORE_URL_ENV: Final = "REACT_STORE_URL"


def store_url(environ: Mapping[str, str] | None = None) -> str:
    """`REACT_STORE_URL` (`sqlite:///path`, `postgresql://...`), default `sqlite:///.temporal/store.db`."""
    env = os.environ if environ is None else environ
    return env.get(STORE_URL_ENV) or f"sqlite:///{DEFAULT_STORE_PATH}"


def sqlite_path(url: str) -> str | None:
    """The file of a `sqlite:///<path>` URL (`sqlite:///:memory:` too), or None for another scheme."""
    prefix = "sqlite:///"
    return url[len(prefix) :] if url.startswith(prefix) else None


def is_postgres(url: str) -> bool:
    """Whether `url` names a PostgreSQL server."""
    return url.startswith(("postgresql://", "postgres://"))
