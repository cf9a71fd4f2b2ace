"""The long-term memory store at 10,000 to 1,000,000 items: SQLite and PostgreSQL side by side.

    .venv/bin/python -m bench.memory_store                               # 10,000 and 100,000 items
    .venv/bin/python -m bench.memory_store --items 10000,100000,1000000

For each backend (a SQLite file in a temporary folder; a throwaway PostgreSQL 15 started as
`tests/postgres_server.py` starts it for the tests, skipped with a printed line when
`/usr/lib/postgresql/15/bin` is absent), fills one namespace through `MemoryStore.put` with seeded,
short realistic texts ("Prefers green tea", ...), `FILL_BATCH` puts awaited together, up to each
size in turn. At each size it measures, one operation at a time:

- put: the last `--puts` items of the size, each a new key (the fill's batches are not timed);
- get: `--ops` gets of random stored keys;
- search: `--ops` searches (`limit` 5) of seeded queries, each alternating with the floor on the
  same query: a brute-force scan in Python over every item of the namespace (their stored vectors
  as one matrix and their texts, read from the database once per size, outside the timing): the
  query embedded as the store embeds it, its cosine against every vector, each query word as a
  substring of every text, ranked with the store's weights (`SEMANTIC_WEIGHT`).

Throughput is operations over the summed latencies of that sequence. Bytes per item: the SQLite
file (after a WAL checkpoint) or `pg_total_relation_size('memory_items')` (table, TOAST and
indexes), over the items. Search quality: the top-1 text of the store's search and of the floor
for a few known queries whose items were put early in the fill (so not among the namespace's
`VECTOR_SCAN` most recent items).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import psycopg

from bench._harness import median
from store import embedding
from store.backend import query_words
from store.memory_store import SEMANTIC_WEIGHT, MemoryStore, open_store

NAMESPACE: Final = ("bench-user", "assistant")
NS_ID: Final = "bench-user/assistant"
FILL_BATCH: Final = 200
SEED: Final = 38

DRINKS = ("green tea", "black coffee", "oat milk lattes", "sparkling water", "chamomile tea", "espresso",
          "orange juice", "hot chocolate", "mint tea", "decaf coffee")  # fmt: skip
CITIES = ("Lisbon", "Berlin", "Toronto", "Osaka", "Nairobi", "Lyon", "Denver", "Krakow", "Austin", "Porto")
JOBS = ("a nurse", "a software engineer", "a teacher", "an architect", "an accountant", "a chef",
        "a pharmacist", "a data analyst", "an electrician", "a translator")  # fmt: skip
FOODS = ("peanuts", "gluten", "lactose", "penicillin", "cats", "pollen", "eggs", "soy")
PETS = ("dog", "cat", "parrot", "hamster", "rabbit", "goldfish")
NAMES = ("Milo", "Luna", "Biscuit", "Pepper", "Olive", "Rocky", "Nala", "Ziggy", "Maple", "Otis")
HOBBIES = ("hiking", "chess", "baking", "cycling", "painting", "gardening", "running", "birdwatching")
LANGUAGES = ("Portuguese", "German", "Japanese", "Spanish", "French", "Polish", "Swahili", "Hindi")
MONTHS = ("January", "March", "May", "July", "September", "November")
TIMES = ("in the morning", "after lunch", "on Tuesdays", "before 10am", "late in the afternoon")

TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: f"Prefers {r.choice(DRINKS)}",
    lambda r: f"Lives in {r.choice(CITIES)}",
    lambda r: f"Works as {r.choice(JOBS)} in {r.choice(CITIES)}",
    lambda r: f"Allergic to {r.choice(FOODS)}",
    lambda r: f"Has a {r.choice(PETS)} named {r.choice(NAMES)}",
    lambda r: f"Enjoys {r.choice(HOBBIES)} on weekends",
    lambda r: f"Speaks {r.choice(LANGUAGES)} at home",
    lambda r: f"Birthday is on {r.choice(MONTHS)} {r.randint(1, 28)}",
    lambda r: f"Prefers meetings {r.choice(TIMES)}",
)

QUERIES = ("green tea", "where does the user live", "pet dog", "allergies", "weekend hobbies",
           "coffee", "languages spoken", "birthday", "meeting times", "job in Berlin")  # fmt: skip

KNOWN: Final = (
    ("Keeps a pet axolotl named Pixel", "axolotl"),
    ("Is allergic to shellfish since childhood", "shellfish allergy"),
    ("Plays the cello in a community orchestra", "cello orchestra"),
    ("Drives a red motorcycle to work", "motorbike commute"),
)
"""(text put early in the fill, query): the first three share a word with their item, the last none."""


def texts(count: int, start: int = 0) -> list[str]:
    """The `count` texts from index `start` (each one seeded by its index: the same on every run)."""
    found: list[str] = []
    for index in range(start, start + count):
        rng = random.Random(SEED * 10_000_019 + index)
        found.append(rng.choice(TEMPLATES)(rng))
    return found


def key_of(index: int) -> str:
    return f"m{index:07d}"


def p99(values: list[float]) -> float:
    """The 99th percentile (exclusive method; the maximum for fewer than 2 values)."""
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100)[98]


@dataclass
class Row:
    """One backend at one size: latencies in ms, bytes per item, fill rate."""

    backend: str
    items: int
    put: list[float]
    get: list[float]
    search: list[float]
    floor: list[float]
    bytes_per_item: float
    fill_per_s: float


@dataclass(frozen=True)
class Target:
    """A backend to measure: its store URL and how to read its items and size directly."""

    name: str
    url: str
    read_items: Callable[[], tuple[list[str], list[bytes]]]
    size_bytes: Callable[[], int]


class Floor:
    """A brute-force search over every item of the namespace, in memory."""

    def __init__(self, item_texts: list[str], vectors: list[bytes]) -> None:
        """Hold the items' texts (lowercased) and their stored vectors as one matrix."""
        self._texts = item_texts
        self._lower = [text.lower() for text in item_texts]
        self._matrix: npt.NDArray[np.float32] = np.frombuffer(b"".join(vectors), dtype=embedding.VECTOR_DTYPE)
        self._matrix = self._matrix.reshape(len(vectors), -1)

    async def search(self, query: str, limit: int = 5) -> list[str]:
        """The texts of the `limit` best items: cosine and substring match, the store's weights."""
        words = query_words(query)
        q = np.frombuffer((await embedding.embed([query]))[0], dtype=embedding.VECTOR_DTYPE)
        similar = np.maximum(self._matrix @ q, 0.0)
        matched = np.fromiter(
            (sum(word in text for word in words) for text in self._lower),
            dtype=np.float32,
            count=len(self._lower),
        )
        text_score = matched / max(float(matched.max()), 1.0)
        scores = SEMANTIC_WEIGHT * similar + (1 - SEMANTIC_WEIGHT) * text_score
        best = np.argsort(-scores, kind="stable")[:limit]
        return [self._texts[int(index)] for index in best]


async def fill(store: MemoryStore, start: int, end: int) -> None:
    """Put items `start` to `end` (the known items at their fixed early indexes), in batches."""
    for batch in range(start, end, FILL_BATCH):
        stop = min(batch + FILL_BATCH, end)
        batch_texts = texts(stop - batch, batch)
        for index in range(batch, stop):
            if index < len(KNOWN) * 10 and index % 10 == 5:
                batch_texts[index - batch] = KNOWN[index // 10][0]
        await asyncio.gather(
            *(
                store.put(NAMESPACE, key_of(i), text)
                for i, text in zip(range(batch, stop), batch_texts, strict=True)
            )
        )


async def measure(store: MemoryStore, target: Target, done: int, size: int, puts: int, ops: int) -> Row:
    """Fill to `size` (the last `puts` puts timed one by one), then time gets, searches and the floor."""
    fill_start = time.perf_counter()
    await fill(store, done, size - puts)
    fill_s = time.perf_counter() - fill_start
    put: list[float] = []
    for index, text in zip(range(size - puts, size), texts(puts, size - puts), strict=True):
        started = time.perf_counter()
        await store.put(NAMESPACE, key_of(index), text)
        put.append((time.perf_counter() - started) * 1e3)
    rng = random.Random(SEED + size)
    get: list[float] = []
    for _ in range(ops):
        key = key_of(rng.randrange(size))
        started = time.perf_counter()
        item = await store.get(NAMESPACE, key)
        get.append((time.perf_counter() - started) * 1e3)
        assert item is not None, key
    floor = Floor(*target.read_items())
    assert len(floor._texts) == size  # pyright: ignore[reportPrivateUsage]
    search: list[float] = []
    floored: list[float] = []
    for index in range(ops):
        query = rng.choice(QUERIES)
        arms = [(search, store.search(NAMESPACE, query)), (floored, floor.search(query))]
        for samples, operation in arms if index % 2 == 0 else arms[::-1]:
            started = time.perf_counter()
            await operation
            samples.append((time.perf_counter() - started) * 1e3)
    filled = size - puts - done
    return Row(target.name, size, put, get, search, floored, target.size_bytes() / size,
               filled / fill_s if fill_s > 0 else 0.0)  # fmt: skip


async def quality(store: MemoryStore, target: Target, size: int) -> list[str]:
    """Table lines: each known query's top-1 text from the store and from the floor."""
    floor = Floor(*target.read_items())
    lines: list[str] = []
    for _, query in (*KNOWN, ("", "green tea")):
        ours = await store.search(NAMESPACE, query, limit=1)
        theirs = await floor.search(query, limit=1)
        top = ours[0].text if ours else "(none)"
        agree = "yes" if top == theirs[0] else "no"
        lines.append(f"| {target.name} | {size:,} | {query} | {top} | {theirs[0]} | {agree} |")
    return lines


def sqlite_target(folder: Path) -> Target:
    path = folder / "memory.db"

    def read_items() -> tuple[list[str], list[bytes]]:
        with sqlite3.connect(path) as conn:
            rows = conn.execute(
                "SELECT text, vector FROM memory_items WHERE ns = ? ORDER BY key", (NS_ID,)
            ).fetchall()
        return [str(text) for text, _ in rows], [bytes(vector) for _, vector in rows]

    def size_bytes() -> int:
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        return sum(p.stat().st_size for p in folder.glob("memory.db*"))

    return Target("SQLite", f"sqlite:///{path}", read_items, size_bytes)


def postgres_target(url: str) -> Target:
    def read_items() -> tuple[list[str], list[bytes]]:
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT text, vector FROM memory_items WHERE ns = %s ORDER BY key", (NS_ID,)
            ).fetchall()
        return [str(text) for text, _ in rows], [bytes(vector) for _, vector in rows]

    def size_bytes() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE memory_items")
            found = conn.execute("SELECT pg_total_relation_size('memory_items')").fetchone()
        return int(found[0]) if found else 0

    return Target("PostgreSQL", url, read_items, size_bytes)


@asynccontextmanager
async def targets(backends: list[str]) -> AsyncIterator[list[Target]]:
    """The backends asked for that can run here (PostgreSQL needs Debian's `postgresql` 15)."""
    async with AsyncExitStack() as stack:
        found: list[Target] = []
        if "sqlite" in backends:
            folder = Path(tempfile.mkdtemp(prefix="bench-memory-"))
            stack.callback(shutil.rmtree, folder, True)
            found.append(sqlite_target(folder))
        if "postgres" in backends:
            from tests.postgres_server import BIN, fresh_database, postgres_server

            if not (BIN / "postgres").exists() or (os.geteuid() == 0 and shutil.which("runuser") is None):
                print(f"PostgreSQL skipped: no PostgreSQL 15 at {BIN} (apt-get install postgresql-15)")
            else:
                server = stack.enter_context(postgres_server())
                found.append(postgres_target(fresh_database(server, "bench_memory")))
        yield found


async def main(sizes: list[int], puts: int, ops: int, backends: list[str]) -> None:
    embedding.embed_now(["warm up"])
    rows: list[Row] = []
    checks: list[str] = []
    async with targets(backends) as found:
        for target in found:
            async with open_store(target.url) as store:
                done = 0
                for size in sizes:
                    started = time.perf_counter()
                    row = await measure(store, target, done, size, puts, ops)
                    done = size
                    rows.append(row)
                    checks.extend(await quality(store, target, size))
                    took = time.perf_counter() - started
                    print(f"{target.name} {size:,} items: {took:.0f} s, "
                          f"fill {row.fill_per_s:.0f} puts/s ({FILL_BATCH} at once)", flush=True)  # fmt: skip

    def ms(samples: list[float]) -> str:
        return f"{median(samples):.2f} / {p99(samples):.2f}"

    def per_s(samples: list[float]) -> str:
        return f"{len(samples) / (sum(samples) / 1e3):,.0f}"

    print()
    print("| backend | items | put p50 / p99 ms | put/s | get p50 / p99 ms | get/s | search p50 / p99 ms "
          "| search/s | floor p50 / p99 ms | search / floor (p50) | bytes/item |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = median(r.search) / median(r.floor)
        print(f"| {r.backend} | {r.items:,} | {ms(r.put)} | {per_s(r.put)} | {ms(r.get)} | {per_s(r.get)} "
              f"| {ms(r.search)} | {per_s(r.search)} | {ms(r.floor)} | {ratio:.2f} "
              f"| {r.bytes_per_item:,.0f} |")  # fmt: skip
    print()
    print("| backend | items | query | store top-1 | floor top-1 | agree |")
    print("|---|---|---|---|---|---|")
    for line in checks:
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The memory store's latency, throughput and size per item.")
    parser.add_argument("--items", default="10000,100000", help="sizes, comma-separated, ascending")
    parser.add_argument("--puts", type=int, default=200, help="timed puts at each size")
    parser.add_argument("--ops", type=int, default=300, help="timed gets and searches at each size")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    item_sizes = sorted(int(size) for size in args.items.split(","))
    asyncio.run(main(item_sizes, args.puts, args.ops, args.backends.split(",")))
