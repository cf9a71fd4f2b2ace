"""A run's result shows its final answer's text: to a plain client, the typed client and older results."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from clients.runs import Runs
from contracts import MAX_ITERATIONS_RESULT, RunResult
from payloads.blob_store import BlobStore
from tests.helpers import call, claim_digest_of, payload_data, start_run, turn


async def test_a_plain_client_reads_the_answer_from_the_result_json(client: Client, task_queue: str) -> None:
    script = [turn(tool_calls=[call("calculator", {"expression": "6 * 7"})]), turn("It is 42.")]
    handle = await start_run(client, task_queue, script, tools=["calculator"])
    await handle.result()
    # What the Temporal CLI, the Web UI or a service in another language sees: plain JSON.
    plain = await Client.connect(client.service_client.config.target_host, namespace=client.namespace)
    raw: dict[str, Any] = await plain.get_workflow_handle(handle.id).result()
    assert raw["answer"] == "It is 42."
    assert raw["outcome"]["termination_reason"] == "final_answer"


async def test_a_run_without_an_answer_says_so(client: Client, task_queue: str) -> None:
    looping = [turn(tool_calls=[call("calculator", {"expression": "1 + 1"})])] * 2
    result = await (
        await start_run(client, task_queue, looping, tools=["calculator"], max_iterations=2)
    ).result()
    assert result.outcome.termination_reason == "max_iterations"
    assert result.answer is None and result.result == MAX_ITERATIONS_RESULT


async def test_a_large_answer_is_claim_checked_and_the_typed_client_reads_it(
    client: Client, task_queue: str, store: BlobStore
) -> None:
    answer = "forty-two " * 30_000  # 300 KB: over the claim-check threshold
    handle = await start_run(client, task_queue, [turn(answer)])
    result = await Runs(client).get(handle.id).result()
    assert result.answer == answer and result.result == answer
    history = await handle.fetch_history()
    completed = next(
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    )
    payload = completed.workflow_execution_completed_event_attributes.result.payloads[0]
    assert claim_digest_of(payload) is not None  # history holds a reference, the store the JSON
    assert RunResult.model_validate_json(await payload_data(payload, store)).answer == answer


def test_results_of_older_runs_get_their_answer_from_the_entries() -> None:
    older = {
        "request_id": "r",
        "run_id": "run",
        "outcome": {"status": "completed", "termination_reason": "final_answer", "answer_seq": 4},
        "first_seq": 3,
        "entries": [
            {
                "seq": 3,
                "kind": "ai_message",
                "at": "2026-01-01T00:00:00Z",
                "payload": {"role": "user", "content": "6 * 7?"},
            },
            {
                "seq": 4,
                "kind": "ai_message",
                "at": "2026-01-01T00:00:01Z",
                "payload": {"role": "assistant", "content": "42"},
            },
        ],
    }
    assert RunResult.model_validate(older).answer == "42"
