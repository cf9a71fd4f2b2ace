"""Fuzzing the start inputs of `ReActRun` and `AgentSession`: junk fails its workflow once, named.

`REACT_FUZZ_START_BATCHES` (default 12) sets the batches of 8 junk start inputs (strategies:
`tests/fuzz_strategies.py`), sent through a raw client with the SDK's default JSON converter.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
from hypothesis import strategies as st
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from tests.fuzz_helpers import BATCH, SAFETY_NET_S, generate, raw_client, task_failures
from tests.fuzz_strategies import Expect, Target, start_inputs

START_BATCHES = int(os.environ.get("REACT_FUZZ_START_BATCHES", "12"))


async def start_once(
    raw: Client, client: Client, task_queue: str, target: Target, args: list[Any], expect: Expect
) -> None:
    workflow = "ReActRun" if target == "run" else "AgentSession"
    about = f"{workflow} started with {args!r:.300}"
    handle = await raw.start_workflow(
        workflow, args=args, id=f"fuzz-start-{uuid.uuid4().hex[:8]}", task_queue=task_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=SAFETY_NET_S)
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type in expect.errors, f"{about}: {cause!r}"
    assert cause.non_retryable, f"{about}: a retryable failure"
    assert not await task_failures(client, handle.id), f"{about}: a workflow task failed"


async def test_junk_start_inputs_fail_the_workflow_once_with_a_named_error(
    client: Client, task_queue: str
) -> None:
    raw = raw_client(client)
    for batch in generate(st.lists(start_inputs, min_size=BATCH, max_size=BATCH), START_BATCHES):
        await asyncio.gather(*(start_once(raw, client, task_queue, *case) for case in batch))
