"""A process that opened the SQLite store and never closed it still exits (CI once hung at exit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, sys
from store.sqlite_backend import SqliteBackend

KEPT = []  # held to the end, as a worker's or a gateway's store is


async def main() -> None:
    backend = SqliteBackend(sys.argv[1])
    KEPT.append(backend)
    print(await backend.migrate())  # opens the connection (and its thread), never closed

asyncio.run(main())
"""


def test_a_process_that_left_its_sqlite_store_open_exits(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "store.db")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the migration ran"
