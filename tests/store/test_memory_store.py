"""The memory store on both real databases: SQLite (a file) and PostgreSQL 15 (a real server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from contracts.memory import MAX_MEMORY_TEXT_CHARS, MAX_MEMORY_VALUE_BYTES, MAX_TTL_S
from store import MemoryStore, StoreInputError, StoreUnavailableError
from store.items import namespace_id
from store.memory_store import backend_for
from store.postgres_backend import MIGRATIONS as PG_MIGRATIONS
from store.sqlite_backend import MIGRATIONS as SQLITE_MIGRATIONS

NS = ("alice", "assistant")


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest_asyncio.fixture
async def clock() -> Clock:
    return Clock()


@pytest_asyncio.fixture
async def memory(store_url: str, clock: Clock) -> AsyncIterator[MemoryStore]:
    store = MemoryStore(backend_for(store_url), clock=clock)
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


async def test_migrations_are_versioned_and_applied_once(store_url: str) -> None:
    migrations = PG_MIGRATIONS if store_url.startswith("postgresql") else SQLITE_MIGRATIONS
    expected = [m.version for m in migrations]
    first = MemoryStore(backend_for(store_url))
    assert await first.migrate() == expected
    await first.put(NS, "k", "kept across a second migrate")
    second = MemoryStore(backend_for(store_url))
    assert await second.migrate() == expected
    item = await second.get(NS, "k")
    assert item is not None and item.text == "kept across a second migrate"
    await first.close()
    await second.close()


async def test_put_get_update_delete(memory: MemoryStore, clock: Clock) -> None:
    made = await memory.put(NS, "drink", "I prefer tea", value={"drink": "tea"})
    clock.now += 10
    updated = await memory.put(NS, "drink", "I prefer green tea", value={"drink": "green tea"})
    assert updated.created_at == made.created_at
    assert (updated.updated_at - made.updated_at).total_seconds() == 10
    got = await memory.get(NS, "drink")
    assert got is not None
    assert (got.text, got.value, got.expires_at) == ("I prefer green tea", {"drink": "green tea"}, None)
    assert await memory.delete(NS, "drink") is True
    assert await memory.get(NS, "drink") is None
    assert await memory.delete(NS, "drink") is False
    assert await memory.search(NS, "green tea") == []


async def test_a_repeated_write_id_writes_once(memory: MemoryStore, clock: Clock) -> None:
    first = await memory.put(NS, "m1", "first text", write_id="call-1")
    clock.now += 5
    again = await memory.put(NS, "m1", "a retry that must not overwrite", write_id="call-1")
    assert (again.text, again.updated_at) == ("first text", first.updated_at)
    later = await memory.put(NS, "m1", "a new call overwrites", write_id="call-2")
    assert later.text == "a new call overwrites"
    assert await memory.count(NS) == 1


async def test_delete_written_forgets_only_the_items_last_written_by_those_calls(memory: MemoryStore) -> None:
    await memory.put(NS, "mine", "written by an erased thread's call", write_id="call-a")
    await memory.put((*NS, "prefs"), "mine-too", "under a path of the namespace", write_id="call-b")
    await memory.put(NS, "rewritten", "first by the erased thread", write_id="call-c")
    await memory.put(NS, "rewritten", "then by another call: no longer the thread's", write_id="call-z")
    await memory.put(NS, "put", "put by hand: no write id")
    await memory.put(("bob", "assistant"), "bobs", "another principal's, same write id", write_id="call-a")
    erased = await memory.delete_written(("alice",), ["call-a", "call-b", "call-c", "call-a"])
    assert erased == 2
    assert await memory.get(NS, "mine") is None and await memory.get((*NS, "prefs"), "mine-too") is None
    assert [item.key for item in (await memory.list(("alice",))).items] == ["put", "rewritten"]
    assert await memory.get(("bob", "assistant"), "bobs") is not None
    assert "mine" not in {item.key for item in await memory.search(NS, "erased thread")}
    assert await memory.delete_written(("alice",), []) == 0


async def test_delete_under_forgets_every_item_of_a_principal_and_no_one_elses(
    memory: MemoryStore, clock: Clock
) -> None:
    await memory.put(NS, "a", "in the agent's namespace")
    await memory.put((*NS, "prefs"), "b", "under a path")
    await memory.put(("alice", "other-agent"), "c", "another agent's namespace", ttl_s=60)
    await memory.put(("alicia", "assistant"), "d", "a principal whose name starts the same")
    await memory.put(("bob", "assistant"), "e", "another principal's")
    clock.now += 120  # "c" has expired: erased all the same
    assert await memory.delete_under(("alice",)) == 3
    assert await memory.count(("alice",)) == 0
    assert await memory.search(NS, "namespace") == []
    assert await memory.get(("alicia", "assistant"), "d") is not None
    assert await memory.get(("bob", "assistant"), "e") is not None
    assert await memory.delete_under(("alice",)) == 0


async def test_list_pages_by_namespace_prefix(memory: MemoryStore) -> None:
    for index in range(5):
        await memory.put(NS, f"k{index}", f"note {index}")
    await memory.put((*NS, "prefs"), "food", "likes curry")
    await memory.put(("alice", "other-agent"), "x", "another agent's")
    await memory.put(("alice_", "assistant"), "y", "a principal whose name extends alice's")
    await memory.put(("bob", "assistant"), "z", "bob's")
    page = await memory.list(NS, limit=4)
    assert [item.key for item in page.items] == ["k0", "k1", "k2", "k3"]
    assert page.next_cursor is not None
    rest = await memory.list(NS, limit=4, cursor=page.next_cursor)
    assert [item.key for item in rest.items] == ["k4", "food"]
    assert rest.next_cursor is None
    assert [item.key for item in (await memory.list((*NS, "prefs"))).items] == ["food"]
    assert await memory.count(("alice",)) == 7
    assert await memory.count(("bob",)) == 1


async def test_recent_items_are_the_newest_of_the_namespace_and_the_ones_under_it(
    store_url: str, clock: Clock
) -> None:
    # The namespace itself and the range under it are read apart and merged (`Backend.recent`).
    backend = backend_for(store_url)
    store = MemoryStore(backend, clock=clock)
    await store.migrate()
    try:
        for index, namespace in enumerate([NS, (*NS, "prefs"), NS, ("alice_", "assistant"), (*NS, "prefs")]):
            clock.now += 1
            await store.put(namespace, f"k{index}", f"note {index}")
        prefix = namespace_id(NS, prefix=True)
        newest = await backend.recent(prefix, 3, clock.now)
        assert [row.key for row in newest] == ["k4", "k2", "k1"]  # k3 is another principal's
        assert [row.key for row in await backend.recent(prefix, 10, clock.now)] == ["k4", "k2", "k1", "k0"]
    finally:
        await store.close()


async def test_search_ranks_by_text_and_meaning_within_the_namespace(memory: MemoryStore) -> None:
    await memory.put(NS, "drink", "The user prefers tea over coffee")
    await memory.put(NS, "city", "The user lives in Lisbon")
    await memory.put(NS, "pet", "Has a cat called Miso")
    await memory.put(("bob", "assistant"), "drink", "Bob prefers coffee")
    found = await memory.search(NS, "which beverage does the user prefer", limit=2)
    assert found[0].key == "drink"
    assert found[0].score is not None and found[0].score > 0
    assert all(item.text != "Bob prefers coffee" for item in found)
    by_meaning = await memory.search(NS, "kitten", limit=1)  # no shared word: similarity alone
    assert [item.key for item in by_meaning] == ["pet"]
    assert [item.key for item in await memory.search(("bob",), "coffee")] == ["drink"]


async def test_search_filters_on_value_fields(memory: MemoryStore) -> None:
    await memory.put(NS, "tea", "The user drinks green tea", value={"kind": "drink", "rank": 1})
    await memory.put(NS, "coffee", "The user drinks coffee at work", value={"kind": "drink", "rank": 2.0})
    await memory.put(NS, "boat", "The user owns a green boat", value={"kind": "thing", "new": True})
    await memory.put(NS, "plain", "The user drinks water", value="not an object")
    await memory.put(NS, "bare", "The user drinks juice")
    drinks = await memory.search(NS, "what does the user drink", limit=5, filters={"kind": "drink"})
    assert {item.key for item in drinks} == {"tea", "coffee"}
    assert [i.key for i in await memory.search(NS, "green", filters={"kind": "thing"})] == ["boat"]
    assert [i.key for i in await memory.search(NS, "drinks", filters={"rank": 2})] == ["coffee"]  # 2 == 2.0
    assert await memory.search(NS, "boat", filters={"new": 1}) == []  # true is not 1
    assert await memory.search(NS, "tea", filters={"rank": "1"}) == []  # "1" is not 1
    assert await memory.search(NS, "tea", filters={"missing": None}) == []


async def test_ttl_expires_and_the_sweep_deletes(memory: MemoryStore, clock: Clock) -> None:
    item = await memory.put(NS, "soon", "a short-lived note", ttl_s=60)
    assert item.expires_at is not None
    await memory.put(NS, "kept", "a note without a ttl")
    clock.now += 61
    assert await memory.get(NS, "soon") is None
    assert [i.key for i in (await memory.list(NS)).items] == ["kept"]
    assert [i.key for i in await memory.search(NS, "short-lived note")] == ["kept"]
    assert await memory.count(NS) == 2
    assert await memory.sweep() == 1
    assert await memory.count(NS) == 1


BadCall = Callable[[MemoryStore], Awaitable[object]]
BAD_INPUT: list[tuple[BadCall, str, str]] = [
    (lambda m: m.put(NS, "k", ""), "invalid_input", "text"),
    (lambda m: m.put(NS, "k", "x" * (MAX_MEMORY_TEXT_CHARS + 1)), "payload_too_large", "text"),
    (lambda m: m.put(NS, "k", "t", value="v" * MAX_MEMORY_VALUE_BYTES), "payload_too_large", "value"),
    (lambda m: m.put(NS, "bad key/", "t"), "invalid_input", "key"),
    (lambda m: m.put(NS, "k\n", "t"), "invalid_input", "key"),  # `$` alone takes a trailing newline
    (lambda m: m.put(("alice", "prefs\n"), "k", "t"), "invalid_input", "namespace part"),
    (lambda m: m.put(("alice",), "k", "t"), "invalid_input", "namespace"),
    (lambda m: m.put(("alice", "../etc"), "k", "t"), "invalid_input", "namespace part"),
    (lambda m: m.put("alice/assistant", "k", "t"), "invalid_input", "namespace"),
    (lambda m: m.put(NS, "k", "t", ttl_s=0), "invalid_input", "ttl_s"),
    (lambda m: m.put(NS, "k", "t", ttl_s=MAX_TTL_S + 1), "invalid_input", "ttl_s"),
    (
        lambda m: m.search(NS, 42),  # pyright: ignore[reportArgumentType]
        "invalid_input",
        "query",
    ),
    (lambda m: m.search(NS, "q", limit=0), "invalid_input", "limit"),
    (lambda m: m.search(NS, "q", filters={"bad field": 1}), "invalid_input", "filter field"),
    (
        lambda m: m.search(NS, "q", filters={"kind": ["a"]}),  # pyright: ignore[reportArgumentType]
        "invalid_input",
        "filter kind",
    ),
    (lambda m: m.search(NS, "q", filters={f"f{i}": i for i in range(9)}), "invalid_input", "filters"),
    (lambda m: m.list(NS, limit=1000), "invalid_input", "limit"),
]


@pytest.mark.parametrize(("call", "code", "words"), BAD_INPUT)
async def test_bad_input_is_refused_by_name_and_writes_nothing(
    memory: MemoryStore, call: BadCall, code: str, words: str
) -> None:
    with pytest.raises(StoreInputError) as refused:
        await call(memory)
    assert refused.value.code == code
    assert words in refused.value.message
    assert await memory.count(("alice",)) == 0


async def test_a_database_that_is_down_is_unavailable(tmp_path: Path) -> None:
    down = MemoryStore(backend_for("postgresql://postgres@127.0.0.1:1/postgres"))
    with pytest.raises(StoreUnavailableError) as refused:
        await down.migrate()
    assert refused.value.code == "unavailable"
    folder = tmp_path / "not-a-folder"
    folder.write_text("a file where the database's folder should be")
    blocked = MemoryStore(backend_for(f"sqlite:///{folder / 'store.db'}"))
    with pytest.raises(StoreUnavailableError):
        await blocked.migrate()
