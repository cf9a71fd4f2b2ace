"""The embedded default's live channel: a `redis-server` beside the dev server, found with no setting.

Real parts: Debian's `redis-server`, the dev server and worker of `testing.AgentTestEnvironment`,
the typed client. "Without redis-server" is a PATH on which it is not found, as on a machine
without it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from contracts import AgentConfig
from contracts.stream import DeltaEvent
from live.channel import LIVE_URL_ENV
from live.dev_channel import channel_url, ensure_dev_channel, forget, record, recorded_url
from live.dev_redis import free_port
from testing import AgentTestEnvironment
from tests.helpers import turn

ANSWER = "word " * 100


def streamed() -> AgentConfig:
    return AgentConfig.model_validate(
        {
            "model": "scripted",
            "script": [turn(ANSWER, chunk_chars=4, chunk_delay_s=0.005)],
            "stream": True,
            "stream_interval_s": 0.05,
        }
    )


async def streamed_run_history(environment: AgentTestEnvironment) -> tuple[str, list[EventType.ValueType]]:
    """Run a streamed answer, follow it with the typed client, and return (its text, its history's kinds)."""
    run = await environment.runs.start("Tell me.", streamed())
    text = ""
    async for event in run.events():
        if isinstance(event, DeltaEvent):
            text += event.text
    assert (await run.result()).answer == ANSWER
    history = await environment.client.get_workflow_handle(run.workflow_id).fetch_history()
    return text, [e.event_type for e in history.events]


@pytest.fixture
def no_redis_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH without `redis-server` (the `temporal` binary is found beside this Python)."""
    assert shutil.which("redis-server") is not None
    kept = [p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "redis-server").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([*kept, str(Path(sys.executable).parent)]))
    assert shutil.which("redis-server") is None


@pytest.fixture
def no_live_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LIVE_URL_ENV, raising=False)


async def test_the_embedded_default_streams_through_the_channel(no_live_setting: None) -> None:
    async with AgentTestEnvironment() as live:
        assert live.live_url is not None
        address = live.client.service_client.config.target_host
        assert channel_url(address) == live.live_url  # what the client and the worker found
        live_text, live_history = await streamed_run_history(live)
    async with AgentTestEnvironment(live=False) as polled:
        assert polled.live_url is None
        polled_text, polled_history = await streamed_run_history(polled)
    assert live_text == polled_text == ANSWER
    # On the channel: no poll Update, no delta signal; through history, both.
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in live_history
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED not in live_history
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in polled_history
    assert len(live_history) * 2 < len(polled_history)
    assert recorded_url(address) is None  # the record went with the environment


async def test_without_redis_server_runs_stream_through_history(
    no_live_setting: None, no_redis_server: None
) -> None:
    async with AgentTestEnvironment() as environment:
        assert environment.live_url is None
        assert channel_url(environment.client.service_client.config.target_host) is None
        text, history = await streamed_run_history(environment)
    assert text == ANSWER
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in history


async def test_an_explicit_setting_wins_over_the_dev_server_s_channel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(LIVE_URL_ENV, "off")
    async with AgentTestEnvironment() as environment:
        address = environment.client.service_client.config.target_host
        assert environment.live_url is None and environment.plugin.live_channel is None
        record(address, "redis://127.0.0.1:1/0")
        try:
            assert channel_url(address) is None
            assert (
                channel_url(address, {LIVE_URL_ENV: "redis://10.0.0.1:6379/0"}) == "redis://10.0.0.1:6379/0"
            )
            assert channel_url(address, {}) == "redis://127.0.0.1:1/0"
        finally:
            forget(address)
        text, history = await streamed_run_history(environment)
    assert text == ANSWER and EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in history


def test_the_rule_reads_a_live_owner_s_record_for_a_loopback_address(no_live_setting: None) -> None:
    address = f"127.0.0.1:{free_port()}"
    assert channel_url(address) is None
    record(address, "redis://127.0.0.1:7/0")
    try:
        assert channel_url(address) == "redis://127.0.0.1:7/0"
        assert channel_url(address.replace("127.0.0.1", "localhost")) == "redis://127.0.0.1:7/0"
        assert channel_url(f"temporal.example.com:{address.rsplit(':')[1]}") is None  # not loopback
    finally:
        forget(address)
    assert channel_url(address) is None


def test_a_record_whose_owner_died_is_not_read(no_live_setting: None) -> None:
    address = f"127.0.0.1:{free_port()}"
    record(address, "redis://127.0.0.1:7/0")
    path = Path(__file__).resolve().parents[2] / ".temporal" / "live" / f"{address.rsplit(':')[1]}.json"
    dead = 2**22 + 12345  # above Linux's default pid_max: no such process
    path.write_text(f'{{"url": "redis://127.0.0.1:7/0", "pid": {dead}}}')
    try:
        assert channel_url(address) is None
    finally:
        path.unlink()


def test_worker_dev_starts_then_finds_the_channel(no_live_setting: None) -> None:
    address = f"127.0.0.1:{free_port()}"
    url, process = ensure_dev_channel(address)
    assert url is not None and process is not None
    try:
        assert channel_url(address) == url
        found, again = ensure_dev_channel(address)  # a second `worker.py --dev`: found, not started
        assert found == url and again is None
    finally:
        forget(address)
        process.terminate()
        process.wait(10)
    assert channel_url(address) is None


def test_worker_dev_starts_nothing_when_the_setting_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LIVE_URL_ENV, "off")
    address = f"127.0.0.1:{free_port()}"
    assert ensure_dev_channel(address) == (None, None)
    assert channel_url(address) is None
