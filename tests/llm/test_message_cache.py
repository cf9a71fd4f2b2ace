"""Each message reaches the LLM activity once per run; the rest go by reference (real server).

The unit tests drive `MessageCache.resolve` against a real on-disk store; the
integration tests read what the LLM activity's inputs weigh in a real run's history,
and lose the cache mid-run (store wiped, worker restarted) to prove the fallback.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.llm.message_cache import MessageCache
from contracts import LLMRequest, MessageRef, PrefixRef, RunResult
from contracts.errors import MESSAGE_CACHE_MISS
from conversation import Message
from conversation.digest import list_digest, message_digest
from hosting.data_converter import build_data_converter
from payloads.blob_store import BlobStore, LocalDiskBlobStore
from tests.agent_tools import registry_for_tests
from tests.helpers import call, message_payloads, payload_data, start_run, thread_of, turn, wait_until
from worker import build_worker

# ---- MessageCache.resolve against a real store ------------------------------------------------


def request(*, prefix: PrefixRef | None = None, messages: list[Message | MessageRef]) -> LLMRequest:
    return LLMRequest(model="scripted", prefix=prefix, messages=messages, iteration=1)


def msg(role: Any, content: str) -> Message:
    return Message(role=role, content=content)


FIRST = [msg("user", "What is 6 * 7?"), msg("assistant", "Let me think."), msg("user", "Go on.")]


@pytest.fixture
def disk(tmp_path: Path) -> LocalDiskBlobStore:
    return LocalDiskBlobStore(tmp_path / "store")


async def test_inline_messages_are_cached_with_their_list(disk: LocalDiskBlobStore) -> None:
    cache = MessageCache(disk)
    assert await cache.resolve(request(messages=list(FIRST))) == FIRST
    digests = [message_digest(m) for m in FIRST]
    for digest in [*digests, list_digest(digests)]:
        assert await disk.has(digest)


async def test_a_prefix_and_refs_resolve_from_another_workers_cache(disk: LocalDiskBlobStore) -> None:
    await MessageCache(disk).resolve(request(messages=list(FIRST)))
    digests = [message_digest(m) for m in FIRST]
    answer = msg("assistant", "42")
    await MessageCache(disk).remember(answer)
    # A fresh cache (another worker, nothing in memory) reads everything from the store.
    cache = MessageCache(disk)
    second = request(
        prefix=PrefixRef(digest=list_digest(digests), start=1, count=2),
        messages=[MessageRef(ref=message_digest(answer), role="assistant"), msg("user", "Thanks")],
    )
    assert await cache.resolve(second) == [*FIRST[1:], answer, msg("user", "Thanks")]


async def test_memory_evicted_messages_are_read_back_from_the_store(disk: LocalDiskBlobStore) -> None:
    cache = MessageCache(disk, memory_bytes=1)  # keeps one entry in memory
    await cache.resolve(request(messages=list(FIRST)))
    digests = [message_digest(m) for m in FIRST]
    resolved = await cache.resolve(
        request(messages=[MessageRef(ref=d, role=m.role) for d, m in zip(digests, FIRST, strict=True)])
    )
    assert resolved == FIRST


async def assert_miss(cache: MessageCache, bad: LLMRequest, fragment: str) -> None:
    with pytest.raises(ApplicationError) as caught:
        await cache.resolve(bad)
    assert caught.value.type == MESSAGE_CACHE_MISS and caught.value.non_retryable
    assert fragment in str(caught.value)


async def test_a_role_mismatch_is_a_miss(disk: LocalDiskBlobStore) -> None:
    cache = MessageCache(disk)
    await cache.resolve(request(messages=list(FIRST)))
    wrong = MessageRef(ref=message_digest(FIRST[0]), role="assistant")
    await assert_miss(cache, request(messages=[wrong]), "has role user, the reference says assistant")


async def test_a_missing_list_is_a_miss(disk: LocalDiskBlobStore) -> None:
    unknown = list_digest(["0" * 64])
    await assert_miss(
        MessageCache(disk), request(prefix=PrefixRef(digest=unknown, start=0, count=1), messages=[]), unknown
    )


async def test_a_prefix_past_the_end_of_its_list_is_a_miss(disk: LocalDiskBlobStore) -> None:
    cache = MessageCache(disk)
    await cache.resolve(request(messages=list(FIRST)))
    listed = list_digest([message_digest(m) for m in FIRST])
    past = request(prefix=PrefixRef(digest=listed, start=2, count=2), messages=[])
    await assert_miss(cache, past, "has no messages 2..4")


async def test_a_missing_message_is_a_miss(disk: LocalDiskBlobStore) -> None:
    missing = message_digest(msg("user", "never sent"))
    await assert_miss(MessageCache(disk), request(messages=[MessageRef(ref=missing, role="user")]), missing)
    # A list whose message is gone from the store (and from memory: a new cache) is a miss too.
    await MessageCache(disk).resolve(request(messages=list(FIRST)))
    disk.path_of(message_digest(FIRST[1])).unlink()
    listed = list_digest([message_digest(m) for m in FIRST])
    prefixed = request(prefix=PrefixRef(digest=listed, start=0, count=3), messages=[])
    await assert_miss(MessageCache(disk), prefixed, message_digest(FIRST[1]))


# ---- in a real run --------------------------------------------------------------------------------

ITERATIONS = 50
RESULT_CHARS = 1_000


def echo_rounds(count: int) -> list[Any]:
    """`count` rounds of one `echo` call (each with its own text of the same size), then an answer."""
    rounds = [
        turn(tool_calls=[call("echo", {"text": f"round {i:03d} " + "x" * RESULT_CHARS})])
        for i in range(count)
    ]
    return [*rounds, turn("done")]


async def llm_inputs_with_sizes(
    handle: WorkflowHandle[Any, Any], store: BlobStore
) -> list[tuple[int, dict[str, Any]]]:
    """(bytes of the scheduling event in history, the decoded `LLMRequest` JSON) of every LLM call."""
    found: list[tuple[int, dict[str, Any]]] = []
    for event in (await handle.fetch_history()).events:
        attributes = event.activity_task_scheduled_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and attributes.activity_type.name == "llm_call"
        ):
            data = await payload_data(attributes.input.payloads[0], store)
            found.append((event.ByteSize(), json.loads(data)))
    return found


async def cache_misses(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The messages of the LLM activity's `message_cache_miss` failures in the run's history."""
    misses: list[str] = []
    for event in (await handle.fetch_history()).events:
        failure = event.activity_task_failed_event_attributes.failure
        if (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
            and failure.application_failure_info.type == MESSAGE_CACHE_MISS
        ):
            misses.append(failure.message)
    return misses


def is_ref(item: dict[str, Any]) -> bool:
    return "ref" in item


async def test_every_llm_call_carries_only_what_is_new(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    handle = await start_run(
        client, task_queue, echo_rounds(ITERATIONS), tools=["echo"], max_iterations=ITERATIONS + 1
    )
    result = await handle.result()
    assert result.status == "completed" and result.result == "done"
    calls = await llm_inputs_with_sizes(handle, store)
    assert len(calls) == ITERATIONS + 1
    first = calls[0][1]
    assert first.get("prefix") is None and not any(is_ref(m) for m in first["messages"])
    inline_seen: set[str] = set()
    for index, (_, sent) in enumerate(calls):
        if index:
            # The previous list by one prefix, the previous answer by reference, the new result inline.
            assert sent.get("prefix") is not None and sent["prefix"]["start"] == 0
            assert sent["prefix"]["count"] == 2 * index - 1
            roles = [(m["role"], is_ref(m)) for m in sent["messages"]]
            assert roles == [("assistant", True), ("tool", False)], f"call {index + 1}: {roles}"
        for message in sent["messages"]:
            if not is_ref(message):
                digest = message_digest(Message.model_validate(message))
                assert digest not in inline_seen, f"call {index + 1} resends a message inline"
                inline_seen.add(digest)
    sizes = [size for size, _ in calls[1:-1]]  # the last one's scripted turn is a short answer
    assert max(sizes) - min(sizes) < 100, f"bytes per LLM call grow: {sizes[0]} .. {sizes[-1]}"
    # Sent inline, the last call alone would weigh all fifty rounds (over 100 KB).
    last = LLMRequest.model_validate(calls[-1][1])
    inline = await MessageCache(store).resolve(last)
    assert len(inline) == 2 * ITERATIONS + 1
    inline_bytes = len(last.model_copy(update={"prefix": None, "messages": inline}).model_dump_json())
    assert inline_bytes > 100_000 > 10 * sizes[-1]
    assert await cache_misses(handle) == []


@pytest.fixture
async def own_store(tmp_path: Path) -> AsyncIterator[Path]:
    """A payload store folder of this test only (so wiping it touches nobody else's payloads)."""
    root = tmp_path / "payloads"
    root.mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


async def test_losing_the_cache_mid_run_resends_one_call_inline(client: Client, own_store: Path) -> None:
    store = LocalDiskBlobStore(own_store)
    own_client = Client(
        client.service_client, namespace=client.namespace, data_converter=build_data_converter(store=store)
    )
    queue = f"cache-loss-{uuid.uuid4().hex[:8]}"

    def worker() -> Any:
        return build_worker(
            own_client, task_queue=queue, registry=registry_for_tests(), store=store,
            max_cached_workflows=0, graceful_shutdown_timeout=timedelta(seconds=30),
        )  # fmt: skip

    script = echo_rounds(3)
    script.insert(2, turn(tool_calls=[call("slow", {"seconds": 2, "label": "hold"})]))
    handle: WorkflowHandle[Any, RunResult]
    async with worker():
        handle = await start_run(own_client, queue, script, tools=["echo", "slow"], max_iterations=10)
        await wait_until(
            handle,
            lambda _, trace: any(
                e.kind == "tool_started" and e.data.get("name") == "slow" for e in trace.events
            ),
        )
    # The worker stopped after the slow tool finished; its store and its memory are gone.
    shutil.rmtree(own_store)
    async with worker():
        result = await handle.result()
        thread = await thread_of(handle)
    assert result.status == "completed" and result.result == "done"
    assert [p.role for p in message_payloads(thread)] == ["user", *["assistant", "tool"] * 4, "assistant"]
    misses = await cache_misses(handle)
    assert len(misses) == 1, misses
    calls = [sent for _, sent in await llm_inputs_with_sizes(handle, store)]
    assert len(calls) == 6, "five calls plus the one resent inline"
    missed, resent, after = calls[3], calls[4], calls[5]
    assert missed.get("prefix") is not None
    assert resent.get("prefix") is None and not any(is_ref(m) for m in resent["messages"])
    assert len(resent["messages"]) == 1 + 2 * 3  # the question and three rounds
    assert after.get("prefix") is not None, "after the resend the cache is used again"
