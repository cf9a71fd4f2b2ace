"""Refused signals are logged in aggregate, not one line each (issue 23: 4,001 lines for 4,000 signals).

The worker runs in this process (`testing.AgentTestEnvironment`), so its workflow log
records reach `caplog`. A burst of 120 refused steers and 120 undecodable ones logs the
1st, 10th and 100th of each kind, with the count so far.
"""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
from temporalio.client import Client

from contracts.signals import SteerInput
from payloads.blob_store import BlobStore
from tests.helpers import start_run, trace_of
from tests.llm_gate import answer_llm_call, held

BURST = 120
COUNT = re.compile(r"; (\d+) of this kind so far")


async def test_a_burst_of_refused_signals_logs_a_few_lines(
    client: Client, task_queue: str, store: BlobStore, caplog: pytest.LogCaptureFixture
) -> None:
    handle = await start_run(client, task_queue, [held()])
    caplog.set_level(logging.INFO)
    blank = SteerInput(content="   ")  # refused by the run: `blank_content`
    await asyncio.gather(*(handle.signal("steer", blank) for _ in range(BURST)))
    await asyncio.gather(*(handle.signal("steer", {"content": 5}) for _ in range(BURST)))
    await answer_llm_call(client, store, handle.id, "done")
    result = await handle.result()
    assert result.status == "completed"
    trace = await trace_of(handle)
    assert sum(trace.rejections.values()) == 2 * BURST  # every refusal still counts in the trace
    lines = [r.getMessage() for r in caplog.records if "steer signal" in r.getMessage()]
    counted = [1, 10, 100]
    for kind in ("rejected steer signal: blank_content", "dropped steer signal: invalid_input"):
        logged = {int(m.group(1)) for line in lines if kind in line and (m := COUNT.search(line))}
        assert sorted(logged) == counted, (kind, lines)
    # A workflow task the server lost is run again, and logs again: a few lines, never one per signal.
    assert len(lines) <= 4 * len(counted), lines
