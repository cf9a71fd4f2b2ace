"""The typed client of sessions: one `AgentSession` workflow per conversation, reachable by its id alone.

    sessions = Sessions(await connect())
    session = sessions.get("agent-42")
    answer = await session.ask_sync("What is 17 * 23?", config=AgentConfig(model="openai/gpt-4o-mini"))
    print(answer.result)

The first ask creates the session (update-with-start) with `config`; later asks reach
the running session, so a stateless chat backend never has to find a run's id or
carry the thread between calls. Each ask runs as a `ReActRun` child whose workflow id
the request's record names (`session.run(request_id)` is its `RunHandle`). The handle
itself is `clients.session_handle.SessionHandle`.

The module-level `ask`, `await_result`, `ask_sync` and `update` are the thin layer
below (they raise the SDK's errors unchanged).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import Client, WorkflowHandle

from clients.base import ClientScope
from clients.errors import RejectedError
from clients.session_handle import DEFAULT_AGENT_ID, SessionHandle, ask_with_start
from clients.update_retry import execute_update
from contracts import TASK_QUEUE, AgentConfig
from contracts.errors import INVALID_INPUT
from contracts.session import AskAccepted, AskInput, RequestRef, RequestResult, SessionInput
from contracts.workflow_ids import workflow_id_problem

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "DEFAULT_AGENT_ID",
    "SessionHandle",
    "Sessions",
    "ask",
    "ask_sync",
    "ask_with_start",
    "await_result",
    "session_workflow_id",
    "update",
]


def session_workflow_id(conversation_id: str) -> str:
    """The workflow id of the session of a conversation: `agent-<conversation id>`."""
    return f"agent-{conversation_id}"


class Sessions(ClientScope):
    """Addresses sessions by id; `get(session_id).ask(...)` creates one on its first ask."""

    def get(self, session_id: str) -> SessionHandle:
        """The session with this workflow id (it need not exist yet: an ask with a config creates it).

        Raises:
            RejectedError: `invalid_input`, an id no session can have (blank, over
                `MAX_SESSION_ID_CHARS` characters, control characters: `contracts.workflow_ids`).
        """
        problem = workflow_id_problem(session_id, "session id")
        if problem is not None:
            raise RejectedError(INVALID_INPUT, problem)
        return SessionHandle(self._client, session_id, self._timeouts, self._store, self._task_queue)

    def conversation(self, conversation_id: str) -> SessionHandle:
        """The session of a conversation id: workflow id `agent-<conversation id>`."""
        return self.get(session_workflow_id(conversation_id))


# ---- the layer below: the SDK's errors, unchanged --------------------------------------------


async def ask(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    *,
    agent_id: str,
    config: AgentConfig,
    snapshot: str | None = None,
    task_queue: str = TASK_QUEUE,
) -> AskAccepted:
    """Ask the session `session_id`, starting it with `config` (and `snapshot`) if it does not exist yet."""
    session = SessionInput(agent_id=agent_id, config=config, snapshot=snapshot)
    return await ask_with_start(client, session_id, ask_input, session, task_queue=task_queue)


async def update(handle: WorkflowHandle[Any, Any], name: str, payload: BaseModel, result_type: type[M]) -> M:
    """Send an Update by name and decode its answer as `result_type`."""
    raw: object = await execute_update(handle, name, payload, result_type)
    return raw if isinstance(raw, result_type) else result_type.model_validate(raw)


async def await_result(client: Client, session_id: str, request_id: str) -> RequestResult:
    """Wait for a request's terminal record (works for any of the last 100 requests)."""
    handle = client.get_workflow_handle(session_id)
    return await update(handle, "await_result", RequestRef(request_id=request_id), RequestResult)


async def ask_sync(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    *,
    agent_id: str,
    config: AgentConfig,
    task_queue: str = TASK_QUEUE,
) -> RequestResult:
    """`ask`, then wait for the result."""
    accepted = await ask(
        client, session_id, ask_input, agent_id=agent_id, config=config, task_queue=task_queue
    )
    return await await_result(client, session_id, accepted.request_id)
