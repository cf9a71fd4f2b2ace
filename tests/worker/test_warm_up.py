"""The worker's warm-up: litellm loads once polling starts, then start-up's objects are frozen out of GC."""

from __future__ import annotations

import asyncio
import gc
import re
import uuid
import weakref
from pathlib import Path

from temporalio.client import Client

from activities.llm import _litellm
from hosting.warm_up import warm_up, warm_up_in_background
from tests.helpers import spawn_worker

WARMED = re.compile(rb"warm-up done: litellm loaded, (\d+) start-up objects frozen")


class _Cycle:
    def __init__(self) -> None:
        self.me = self


async def test_warm_up_loads_litellm_then_freezes_what_is_alive() -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    frozen = await asyncio.to_thread(warm_up)
    assert _litellm.is_configured()
    assert frozen > 100_000  # litellm and the SDK alone are far more
    # Frozen objects freed by reference counting leave the count; nothing new joins it.
    assert gc.get_freeze_count() <= frozen
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is None, "a cycle made after the freeze is still collected"


async def test_the_background_warm_up_runs_once_per_process() -> None:
    first = warm_up_in_background()
    assert warm_up_in_background() is first
    await asyncio.to_thread(first.join, 120)
    assert not first.is_alive() and gc.get_freeze_count() > 0


async def test_worker_py_warms_up_once_it_polls(client: Client, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    address = client.service_client.config.target_host
    queue = f"react-warm-{uuid.uuid4().hex[:8]}"
    worker = spawn_worker(address, queue, log)
    try:
        deadline = asyncio.get_running_loop().time() + 90
        while (found := WARMED.search(log.read_bytes())) is None:
            assert worker.poll() is None, log.read_text()[-2000:]
            assert asyncio.get_running_loop().time() < deadline, log.read_text()[-2000:]
            await asyncio.sleep(0.2)
        text = log.read_bytes()
        assert text.index(b"worker polling task queue") < text.index(b"warm-up done")
        assert int(found.group(1)) > 100_000
    finally:
        worker.terminate()
        worker.wait(timeout=30)
