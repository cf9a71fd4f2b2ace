"""The `RunAdmission` workflow on its own: grants up to the limit, refuses past it, frees, rolls over.

On the `agents` fixture's dev server and worker, through `admit_request` and `release_request`
(what the gateway and a firing use): holders of sessions that do not exist hold their slots
through the grace; a released slot is granted again; an admit that does not decode is rejected
by name and changes nothing; after `MAX_ADMITS_PER_RUN` admits the workflow continues as new
with its slots.
"""

from __future__ import annotations

import uuid

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from activities.background.run_admission import admit_request, release_request
from contracts.admission import ADMIT_UPDATE, SLOTS_QUERY, AdmissionState, SlotHolder, admission_workflow_id
from testing import AgentTestEnvironment
from workflows.background.run_admission import MAX_ADMITS_PER_RUN

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _holder(principal: str, n: int) -> SlotHolder:
    return SlotHolder(session_id=f"gw/{principal}/default/t{n}", request_id=f"r{n}")


async def test_grants_up_to_the_limit_then_refuses_and_a_release_frees(agents: AgentTestEnvironment) -> None:
    principal = f"p{uuid.uuid4().hex[:8]}"

    async def admit(n: int) -> str:
        decision = await admit_request(agents.client, principal, _holder(principal, n), 2, agents.task_queue)
        return decision.outcome

    assert [await admit(n) for n in (1, 2, 3)] == ["granted", "granted", "refused"]
    assert await admit(1) == "granted"  # a holder asking again keeps its slot
    await release_request(agents.client, principal, _holder(principal, 1))
    assert await admit(3) == "granted"
    assert await admit(1) == "refused"

    handle = agents.client.get_workflow_handle(admission_workflow_id(principal))
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(ADMIT_UPDATE, {"session_id": "s", "request_id": "r", "limit": 0})  # pyright: ignore[reportUnknownMemberType]
    assert isinstance(refused.value.cause, ApplicationError) and refused.value.cause.type == "invalid_input"
    state = await handle.query(SLOTS_QUERY, result_type=AdmissionState)
    assert sorted(s.request_id for s in state.slots) == ["r2", "r3"]


async def test_it_continues_as_new_with_its_slots(agents: AgentTestEnvironment) -> None:
    principal = f"p{uuid.uuid4().hex[:8]}"
    for n in range(MAX_ADMITS_PER_RUN + 5):
        await admit_request(agents.client, principal, _holder(principal, n % 2), 2, agents.task_queue)
    runs = [
        w async for w in agents.client.list_workflows(f"WorkflowId = '{admission_workflow_id(principal)}'")
    ]
    assert WorkflowExecutionStatus.CONTINUED_AS_NEW in {w.status for w in runs}
    state = await agents.client.get_workflow_handle(admission_workflow_id(principal)).query(
        SLOTS_QUERY, result_type=AdmissionState
    )
    assert sorted(s.request_id for s in state.slots) == ["r0", "r1"]
    refused = await admit_request(agents.client, principal, _holder(principal, 9), 2, agents.task_queue)
    assert (refused.outcome, refused.held, refused.limit) == ("refused", 2, 2)
