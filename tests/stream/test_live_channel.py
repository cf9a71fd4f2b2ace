"""The live channel (`REACT_LIVE_URL`, Redis Streams): followers read a run without writing its history.

A real `redis-server` (Debian's), a dev server and a worker whose plugin writes to the channel
(`hosting.live_sink`), with no workflow cache (every workflow task replays: nothing may be
written twice while replaying). The client follows through the same `RunHandle.events()`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from collections.abc import Set as AbstractSet

import pytest
import pytest_asyncio
from pydantic import TypeAdapter
from redis.asyncio import Redis
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from clients.channel_entries import NO_CHANNEL_AFTER_S, client_channel
from clients.runs import Runs
from clients.sessions import Sessions
from clients.stream import TextAssembler
from contracts import AgentConfig
from contracts.stream import DeltaEvent, StreamEvent, TraceItem
from conversation import MessageEntry
from hosting.plugin import DurableReactPlugin
from live.calls import CutCall, LiveDelta
from live.channel import (
    LIVE_URL_ENV,
    START,
    LiveChannel,
    live_url,
    open_channel,
)
from live.dev_redis import free_port, start_redis
from live.redis_channel import LIVE_CLOSED_TTL_S, LIVE_TTL_S, calls_key_of, key_of
from live.skipped import SkippedEntries
from payloads.blob_store import blob_store_from_env
from settings.env_values import SettingsError
from testing import AgentTestEnvironment
from tests.helpers import spawn_worker, turn
from worker import build_worker

EVENTS: TypeAdapter[DeltaEvent | TraceItem] = TypeAdapter(StreamEvent)
ANSWER = "word " * 60


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    port = free_port()
    server = start_redis(port)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def live_agents(redis_url: str) -> AsyncIterator[AgentTestEnvironment]:
    """A worker that writes to the channel (its plugin reads `REACT_LIVE_URL` when it is built)."""
    os.environ[LIVE_URL_ENV] = redis_url
    try:
        environment = AgentTestEnvironment()
    finally:
        os.environ.pop(LIVE_URL_ENV, None)
    async with environment:
        yield environment


@pytest.fixture
def follow_live(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """This test's client follows runs on the channel."""
    monkeypatch.setenv(LIVE_URL_ENV, redis_url)
    return redis_url


def streamed(content: str = ANSWER, **fields: object) -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": [turn(content, chunk_chars=4, chunk_delay_s=0.005)],
            "stream": True,
            **fields,
        }
    )


def slowly_streamed(content: str) -> AgentConfig:
    """An agent that streams `content` 4 characters every 0.08 s (about 2 s per 100 characters)."""
    return AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": [turn(content, chunk_chars=4, chunk_delay_s=0.08)],
            "stream": True,
            "stream_interval_s": 0.05,
        }
    )


async def follow(runs: Runs, run_workflow_id: str) -> tuple[str, list[str], list[DeltaEvent | TraceItem]]:
    text = TextAssembler()
    kinds: list[str] = []
    events: list[DeltaEvent | TraceItem] = []
    assembled = ""
    async for event in runs.get(run_workflow_id).events():
        events.append(event)
        text.add(event)
        if isinstance(event, DeltaEvent):
            assembled = text.text
        else:
            kinds.append(event.event.kind)
    return assembled, kinds, events


async def channel_items(channel: LiveChannel, workflow_id: str) -> list[tuple[str, DeltaEvent | TraceItem]]:
    found: list[tuple[str, DeltaEvent | TraceItem]] = []
    offset = START
    while batch := await channel.read(workflow_id, offset, 0.05):
        found += [(o, EVENTS.validate_json(d)) for o, d in batch]
        offset = batch[-1][0]
    return found


async def test_a_streamed_ask_is_followed_on_the_channel_with_no_poll_in_history(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    client = live_agents.client
    sessions = Sessions(client, task_queue=live_agents.task_queue)
    runs = Runs(client, task_queue=live_agents.task_queue)
    session = sessions.get(f"live-{uuid.uuid4().hex[:8]}")
    accepted = await session.ask("Tell me.", config=streamed())
    text, kinds, events = await follow(runs, accepted.run_workflow_id)
    assert text == ANSWER
    assert kinds[0] == "request_started" and kinds[-1] == "request_completed"
    seqs = [e.event.seq for e in events if isinstance(e, TraceItem)]
    assert seqs == sorted(set(seqs)) and seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert (await runs.get(accepted.run_workflow_id).result()).answer == ANSWER

    history = await client.get_workflow_handle(accepted.run_workflow_id).fetch_history()
    kinds_in_history = [e.event_type for e in history.events]
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED not in kinds_in_history  # no poll
    # The LLM activity wrote its deltas to the channel: no publish signal, so no history per token.
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in kinds_in_history

    # The channel holds each item once, in the run's order, though every task replayed (no cache).
    channel = open_channel(follow_live)
    try:
        items = await channel_items(channel, accepted.run_workflow_id)
    finally:
        await channel.close()
    trace = [e.event.seq for _, e in items if isinstance(e, TraceItem)]
    deltas = [(e.call, e.attempt, e.seq) for _, e in items if isinstance(e, DeltaEvent)]
    assert trace == seqs and len(deltas) == len(set(deltas))
    assert "".join(e.text for _, e in items if isinstance(e, DeltaEvent)) == ANSWER


async def test_a_reader_resumes_from_a_durable_offset(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    runs = Runs(live_agents.client, task_queue=live_agents.task_queue)
    run = await runs.start("Tell me.", streamed())
    await follow(runs, run.workflow_id)
    channel = open_channel(follow_live)
    try:
        everything = await channel_items(channel, run.workflow_id)
        middle = len(everything) // 2
        resumed = await channel.read(run.workflow_id, everything[middle][0], 0.05)
    finally:
        await channel.close()
    assert [o for o, _ in resumed] == [
        o for o, _ in everything[middle + 1 :]
    ]  # nothing twice, nothing missing


async def test_an_interrupting_steer_keeps_what_followers_saw(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    runs = Runs(live_agents.client, task_queue=live_agents.task_queue)
    long = "lorem ipsum " * 400
    config = AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": [turn(long, chunk_chars=5, chunk_delay_s=0.02), turn("Short.")],
            "stream": True,
            "stream_interval_s": 0.05,
        }
    )
    run = await runs.start("Tell me a long story.", config)
    seen, steered, saw = TextAssembler(), False, ""
    async for event in run.events():
        if isinstance(event, TraceItem) and event.event.kind == "llm_interrupted":
            saw = seen.text  # what this follower had of the call when it was cut
        seen.add(event)
        if isinstance(event, DeltaEvent) and len(seen.text) > 100 and not steered:
            steered = True
            assert (await run.steer("Shorter, please.", mode="interrupt")).mode == "interrupt"
    result = await run.result()
    assert result.answer == "Short."
    interrupted = [
        e for e in result.entries if isinstance(e, MessageEntry) and e.refs.get("interrupted") == "true"
    ]
    assert len(interrupted) == 1
    partial = interrupted[0].payload.content or ""
    assert len(partial) > 100 and long.startswith(partial) and partial == saw
    # No delta reached the run: it read the cut call's text from the channel (a local activity).
    history = await live_agents.client.get_workflow_handle(run.workflow_id).fetch_history()
    kinds = [e.event_type for e in history.events]
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in kinds
    assert EventType.EVENT_TYPE_MARKER_RECORDED in kinds


async def test_a_cut_call_takes_no_more_deltas_and_answers_its_latest_attempt(follow_live: str) -> None:
    channel = open_channel(follow_live)
    run = f"cut-{uuid.uuid4().hex[:8]}"

    def delta(call: int, attempt: int, seq: int, text: str) -> LiveDelta:
        event = DeltaEvent(call=call, attempt=attempt, seq=seq, text=text)
        return LiveDelta(call, attempt, event.model_dump_json().encode(), text)

    try:
        assert await channel.publish_delta(run, delta(0, 1, 0, "Once "))
        assert await channel.publish_delta(run, delta(0, 2, 0, "Twice "))  # a retry starts over
        assert await channel.publish_delta(run, delta(0, 1, 1, "stale "))  # an older attempt's: not text
        assert await channel.publish_delta(run, delta(0, 2, 1, "upon"))
        assert await channel.publish_delta(run, delta(1, 1, 0, "another call"))
        assert await channel.cut_call(run, 0) == CutCall(attempt=2, text="Twice upon")
        assert not await channel.publish_delta(run, delta(0, 2, 2, " a time"))  # refused: cut
        assert await channel.publish_delta(run, delta(1, 1, 1, " goes on"))
        assert await channel.cut_call(run, 7) == CutCall(attempt=0, text="")  # nothing published
        items = await channel_items(channel, run)
        texts = [e.text for _, e in items if isinstance(e, DeltaEvent)]
        assert texts == ["Once ", "Twice ", "stale ", "upon", "another call", " goes on"]
    finally:
        await channel.close()


async def test_a_run_whose_worker_has_no_channel_is_followed_on_its_stream(
    client: Client, follow_live: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker turned off the channel (`off` wins over the dev server's): the follower finds
    # nothing there and polls.
    monkeypatch.setenv(LIVE_URL_ENV, "off")
    queue = f"no-live-{uuid.uuid4().hex[:8]}"
    worker = build_worker(client, task_queue=queue, max_cached_workflows=0)
    monkeypatch.setenv(LIVE_URL_ENV, follow_live)
    async with worker:
        runs = Runs(client, task_queue=queue)
        run = await runs.start("Tell me.", streamed())
        text, kinds, _ = await asyncio.wait_for(follow(runs, run.workflow_id), 60)
    assert text == ANSWER and kinds[-1] == "request_completed"


async def test_a_follower_whose_channel_fails_reads_the_run_s_stream(
    live_agents: AgentTestEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Redis of this test only, killed while the follower reads it: the worker drops what it
    # cannot write, and the follower goes on from the run's Workflow Stream, nothing twice.
    port = free_port()
    server = start_redis(port)
    monkeypatch.setenv(LIVE_URL_ENV, f"redis://127.0.0.1:{port}/0")
    queue = f"live-down-{uuid.uuid4().hex[:8]}"
    content = "lorem ipsum " * 40
    config = AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": [turn(content, chunk_chars=4, chunk_delay_s=0.01)],
            "stream": True,
            "stream_interval_s": 0.05,
        }
    )
    try:
        async with build_worker(live_agents.client, task_queue=queue, max_cached_workflows=0):
            run = await Runs(live_agents.client, task_queue=queue).start("Tell me.", config)
            text, at_end, seqs = TextAssembler(), "", list[int]()
            async for event in run.events():
                if isinstance(event, TraceItem):
                    seqs.append(event.event.seq)
                    if event.event.kind == "llm_completed":
                        at_end = text.text
                text.add(event)
                if isinstance(event, DeltaEvent) and server.poll() is None:
                    server.kill()
                    server.wait(10)
            assert at_end == content
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) and len(seqs) > 3
            assert (await run.result()).answer == content
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def test_the_setting_names_a_redis_server_or_nothing() -> None:
    assert live_url({}) is None and live_url({LIVE_URL_ENV: "  "}) is None
    assert live_url({LIVE_URL_ENV: "redis://127.0.0.1:6379/0"}) == "redis://127.0.0.1:6379/0"
    with pytest.raises(SettingsError, match="redis://"):
        live_url({LIVE_URL_ENV: "http://127.0.0.1:6379"})
    with pytest.raises(SettingsError):
        open_plugin("nats://127.0.0.1:4222")  # a worker refuses to start with it


def open_plugin(url: str) -> DurableReactPlugin:
    os.environ[LIVE_URL_ENV] = url
    try:
        return DurableReactPlugin()
    finally:
        os.environ.pop(LIVE_URL_ENV, None)


async def test_twenty_conversations_at_once_lose_nothing_on_the_channel(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    sessions = Sessions(live_agents.client, task_queue=live_agents.task_queue)
    runs = Runs(live_agents.client, task_queue=live_agents.task_queue)

    async def conversation() -> tuple[str, list[str]]:
        accepted = await sessions.get(f"live-{uuid.uuid4().hex[:8]}").ask("Tell me.", config=streamed())
        text, kinds, _ = await follow(runs, accepted.run_workflow_id)
        return text, kinds

    outcomes = await asyncio.gather(*(conversation() for _ in range(20)))
    assert all(text == ANSWER and kinds[-1] == "request_completed" for text, kinds in outcomes)
    # Each trace event once: one start and one end in each conversation.
    assert all(k.count("request_started") == 1 and k.count("request_completed") == 1 for _, k in outcomes)


async def test_a_worker_killed_mid_stream_the_answer_completes_and_shows_once(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    # The real worker process writing to the channel, killed -9 while its LLM activity streams
    # there: a second one retries the call (attempt 2), and the follower ends with the answer once.
    # The stream lasts about 7 s so that a follower slowed by a loaded machine still sees it mid-way.
    address = live_agents.client.service_client.config.target_host
    queue = f"live-kill-{uuid.uuid4().hex[:8]}"
    content = "lorem ipsum " * 30
    config = slowly_streamed(content)
    worker_env = {**os.environ, LIVE_URL_ENV: follow_live}
    first = spawn_worker(address, queue, env=worker_env)
    second: subprocess.Popen[bytes] | None = None
    try:
        runs = Runs(live_agents.client, task_queue=queue)
        run = await runs.start("Tell me.", config)
        text, at_end, seqs, attempts = TextAssembler(), "", list[int](), set[int]()
        async with asyncio.timeout(120):
            async for event in run.events():
                if isinstance(event, TraceItem):
                    seqs.append(event.event.seq)
                    if event.event.kind == "llm_completed":
                        at_end = text.text
                else:
                    attempts.add(event.attempt)
                text.add(event)
                if isinstance(event, DeltaEvent) and second is None and len(text.text) > 40:
                    first.send_signal(signal.SIGKILL)
                    first.wait(10)
                    second = spawn_worker(address, queue, env=worker_env)
        result = await run.result()
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)
    assert second is not None and attempts == {1, 2}
    assert at_end == content and result.answer == content
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # each trace event once
    answers = [e for e in result.entries if isinstance(e, MessageEntry) and e.payload.role == "assistant"]
    assert [a.payload.content for a in answers] == [content]


class LateTraceChannel:
    """The real channel, but the worker's trace items reach it `delay_s` late (a worker under load)."""

    def __init__(self, inner: LiveChannel, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s
        self.skipped: SkippedEntries = inner.skipped

    async def publish(self, items: Mapping[str, list[bytes]], closed: AbstractSet[str] = frozenset()) -> None:
        await asyncio.sleep(self.delay_s)
        await self.inner.publish(items, closed)

    async def publish_delta(self, workflow_id: str, delta: LiveDelta) -> bool:
        return await self.inner.publish_delta(workflow_id, delta)

    async def cut_call(self, workflow_id: str, call: int) -> CutCall:
        return await self.inner.cut_call(workflow_id, call)

    async def read(self, workflow_id: str, after: str, wait_s: float) -> list[tuple[str, bytes]]:
        return await self.inner.read(workflow_id, after, wait_s)

    async def exists(self, workflow_id: str) -> bool:
        return await self.inner.exists(workflow_id)

    async def close(self) -> None:
        await self.inner.close()


class SlowToConnectChannel(LateTraceChannel):
    """A channel nothing of a run reaches for `delay_s` after the worker first writes.

    Its LLM activity's first deltas wait too (a worker whose connection to Redis is slow to open).
    """

    def __init__(self, inner: LiveChannel, delay_s: float) -> None:
        super().__init__(inner, delay_s)
        self._open_at: float | None = None

    async def publish_delta(self, workflow_id: str, delta: LiveDelta) -> bool:
        now = asyncio.get_running_loop().time()
        self._open_at = now + self.delay_s if self._open_at is None else self._open_at
        await asyncio.sleep(max(0.0, self._open_at - now))
        return await self.inner.publish_delta(workflow_id, delta)


async def test_a_worker_that_writes_its_first_items_late_is_still_followed_on_the_channel(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    # Its first trace items reach the channel 2.5 s late: the follower must not take the run for
    # one whose worker has no channel (its stream carries no deltas: the text would show only at
    # each call's end).
    queue = f"live-late-{uuid.uuid4().hex[:8]}"
    channel = LateTraceChannel(open_channel(follow_live), delay_s=2.5)
    plugin = DurableReactPlugin(live_channel=channel, store=blob_store_from_env())
    content = "lorem ipsum " * 20
    config = slowly_streamed(content)
    try:
        async with Worker(live_agents.client, task_queue=queue, plugins=[plugin], max_cached_workflows=0):
            runs = Runs(live_agents.client, task_queue=queue)
            run = await runs.start("Tell me.", config)
            text, _, events = await asyncio.wait_for(follow(runs, run.workflow_id), 60)
    finally:
        await channel.close()
    assert text == content
    assert any(isinstance(e, DeltaEvent) for e in events)


async def test_a_run_whose_worker_starts_after_the_follow_is_still_followed_on_the_channel(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    # The follower starts first; the queue's worker only later than `NO_CHANNEL_AFTER_S` (a worker
    # process still importing, or restarted), and its first items reach the channel late too. The
    # wait for the channel counts from the run's first workflow task, not from the follow's start
    # (CI saw a worker killed mid-stream never killed: its follower had taken the stream instead).
    queue = f"live-later-{uuid.uuid4().hex[:8]}"
    channel = SlowToConnectChannel(open_channel(follow_live), delay_s=2.5)
    plugin = DurableReactPlugin(live_channel=channel, store=blob_store_from_env())
    content = "lorem ipsum " * 20
    config = slowly_streamed(content)
    runs = Runs(live_agents.client, task_queue=queue)
    run = await runs.start("Tell me.", config)
    following = asyncio.create_task(follow(runs, run.workflow_id))
    try:
        await asyncio.sleep(NO_CHANNEL_AFTER_S + 1)
        assert not following.done()
        async with Worker(live_agents.client, task_queue=queue, plugins=[plugin], max_cached_workflows=0):
            text, _, events = await asyncio.wait_for(following, 60)
    finally:
        following.cancel()
        await channel.close()
    assert text == content
    assert any(isinstance(e, DeltaEvent) for e in events)


async def test_an_entry_without_data_or_with_junk_is_skipped_and_counted_and_the_follow_completes(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    runs = Runs(live_agents.client, task_queue=live_agents.task_queue)
    run = await runs.start("Tell me.", streamed())
    raw = Redis.from_url(follow_live)  # pyright: ignore[reportUnknownMemberType]
    try:
        await raw.xadd(key_of(run.workflow_id), {b"x": b"no data field"})
        await raw.xadd(key_of(run.workflow_id), {b"d": b"{not json"})
        await raw.xadd(key_of(run.workflow_id), {b"d": b'{"kind": "nothing"}'})
    finally:
        await raw.aclose()
    channel = client_channel(live_agents.client)
    assert channel is not None
    before = channel.skipped.count
    text, kinds, _ = await follow(runs, run.workflow_id)
    assert text == ANSWER and kinds[-1] == "request_completed"
    assert channel.skipped.count - before == 3
    reread = open_channel(follow_live)
    try:
        items = await reread.read(run.workflow_id, START, 0.05)
    finally:
        await reread.close()
    assert sum(1 for _, data in items if data == b"") == 1 and reread.skipped.count == 1


async def test_a_closed_runs_keys_expire_after_a_short_grace_not_a_day(
    live_agents: AgentTestEnvironment, follow_live: str
) -> None:
    runs = Runs(live_agents.client, task_queue=live_agents.task_queue)
    run = await runs.start("Tell me.", streamed())
    await follow(runs, run.workflow_id)
    await run.result()
    raw = Redis.from_url(follow_live)  # pyright: ignore[reportUnknownMemberType]
    try:
        ttls: tuple[int, int] = (-2, -2)
        for _ in range(100):  # the worker writes the closing item in the background
            ttls = (await raw.ttl(key_of(run.workflow_id)), await raw.ttl(calls_key_of(run.workflow_id)))
            if all(0 < ttl <= LIVE_CLOSED_TTL_S for ttl in ttls):
                break
            await asyncio.sleep(0.1)
    finally:
        await raw.aclose()
    assert all(0 < ttl <= LIVE_CLOSED_TTL_S < LIVE_TTL_S for ttl in ttls), ttls
