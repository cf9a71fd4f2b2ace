"""A remote A2A agent as a tool: the model's request goes to the agent at `url` as one A2A task.

    # mytools.py, loaded with `worker.py --tools mytools`
    def register(registry):
        register_a2a_agent(registry, "researcher", "https://agents.example.com/a2a/default",
                           token=os.environ["RESEARCHER_TOKEN"], description="Looks things up")

Each call is one `run_tool` activity (the run's timeouts and retries apply; it heartbeats, so
a cancel reaches it). The message id and context id come from the call's idempotency key, so a
retried call re-attaches to the task it started (a Durable ReAct gateway answers a known message
id with its original request) instead of asking twice. The result is the remote answer, its
structured output and its usage (the remote task's `usage` metadata: tokens and cost cross the
protocol). When the calling run is cancelled, the remote task is cancelled too (`tasks/cancel`),
so a cancel crosses the protocol as well. A remote task that fails, is canceled or waits for
input is a `tool_error` result the model reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

from pydantic import JsonValue

from activities.tools.tool_errors import ToolFailure
from activities.tools.tool_registry import ToolRegistry
from contracts.whole_numbers import whole_number

__all__ = ["call_a2a_agent", "register_a2a_agent"]

CARD_PATH = "/.well-known/agent-card.json"
CANCEL_TIMEOUT_S = 10.0


def register_a2a_agent(
    registry: ToolRegistry,
    name: str,
    url: str,
    *,
    token: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
) -> None:
    """Register the A2A agent at `url` (its JSON-RPC endpoint; the card is at `url` + the well-known path)."""

    async def ask_remote_agent(request: str, idempotency_key: str) -> dict[str, JsonValue]:
        """Ask the remote agent.

        Args:
            request: What to ask the agent, as a complete, self-contained request.
            idempotency_key: Filled in by the worker (the same on every retry of the call).
        """
        return await call_a2a_agent(url, request, idempotency_key, token=token)

    registry.register(
        ask_remote_agent,
        name=name,
        description=description or f"Ask the remote agent {name!r} (A2A).",
        requires_approval=requires_approval,
    )


async def call_a2a_agent(
    url: str, request: str, key: str, *, token: str | None = None
) -> dict[str, JsonValue]:
    """One A2A task at `url` for `request`, its identity derived from `key`; the answer, output and usage.

    Raises:
        ToolFailure: the remote task failed, was canceled or waits for input (non-retryable), or the
            agent could not be reached (retryable).
    """
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        Message,
        Part,
        Role,
        SendMessageRequest,
    )
    from google.protobuf.json_format import MessageToDict, ParseDict

    digest = hashlib.sha256(key.encode()).hexdigest()
    message = Message(
        message_id=f"m{digest[:40]}",
        context_id=f"tool-{digest[:32]}",
        role=Role.ROLE_USER,
        parts=[Part(text=request)],
    )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=None)) as http:
        try:
            card_json = (await http.get(url.rstrip("/") + CARD_PATH)).raise_for_status().json()
        except (httpx.HTTPError, ValueError) as error:
            raise ToolFailure(f"the remote agent's card could not be read: {error}", retryable=True) from None
        card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        task_id = ""
        state = ""
        found: dict[str, Any] = {}
        try:
            async for event in client.send_message(SendMessageRequest(message=message)):
                if event.HasField("task"):
                    task_id, state = event.task.id, str(event.task.status.state)
                elif event.HasField("status_update"):
                    state = str(event.status_update.status.state)
                    found.update(MessageToDict(event.status_update.metadata))
                    if event.status_update.status.message.parts:
                        found["status_message"] = MessageToDict(event.status_update.status.message).get(
                            "parts"
                        )
                elif event.HasField("artifact_update"):
                    artifact = MessageToDict(event.artifact_update.artifact)
                    found[artifact.get("name", "artifact")] = artifact.get("parts", [])
        except asyncio.CancelledError:
            if task_id:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.shield(client.cancel_task(CancelTaskRequest(id=task_id))), CANCEL_TIMEOUT_S
                    )
            raise
        except (httpx.HTTPError, ConnectionError) as error:
            raise ToolFailure(f"the remote agent could not be reached: {error}", retryable=True) from None
    return _result(task_id, state, found)


def _result(task_id: str, state: str, found: dict[str, Any]) -> dict[str, JsonValue]:
    from a2a.types.a2a_pb2 import TaskState

    if state != str(TaskState.TASK_STATE_COMPLETED):
        number = whole_number(state)
        name = TaskState.Name(number) if number is not None else "unknown"
        raise ToolFailure(
            f"the remote task {task_id} ended {name}",
            details={"task_id": task_id, "status": found.get("status_message")},
        )
    answer = "".join(p.get("text", "") for p in found.get("answer", []))
    result: dict[str, JsonValue] = {"answer": answer, "task_id": task_id, "usage": found.get("usage", {})}
    output = [p.get("data") for p in found.get("output", [])]
    if output:
        result["output"] = output[0]
    return result
