"""The Temporal side of the session commands: ask, await, follow a request, query, export.

A session is an `AgentSession` workflow addressed by string names only (`ask`,
`status`, `thread`, ...), through the client API of `runtime.sessions`; the CLI
never imports workflow code.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import JsonValue, TypeAdapter
from rich.console import Console
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from cli import inputs, ops
from cli.demo import demo_notice
from cli.errors import NO_WORKER_HINT, CliError, err_console
from contracts import AgentConfig
from contracts.session import (
    AskAccepted,
    AskInput,
    ExportInput,
    ExportResult,
    RequestRecord,
    SessionStatus,
    ThreadQuery,
)
from conversation import Entry
from runtime import sessions

ASK_TIMEOUT_S = 30.0
QUERY_TIMEOUT = timedelta(seconds=10)
RECORDS = TypeAdapter(list[RequestRecord])


async def is_running(client: Client, session_id: str) -> bool:
    """Whether the session exists and runs, so an ask reaches it instead of creating it."""
    try:
        description = await client.get_workflow_handle(session_id).describe(rpc_timeout=QUERY_TIMEOUT)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND and not error.message.lower().startswith("namespace"):
            return False
        raise
    return description.raw_description.workflow_execution_info.status == (
        WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    )


async def ask(
    client: Client,
    session_id: str,
    ask_input: AskInput,
    *,
    agent_id: str,
    config: AgentConfig,
    snapshot: str | None = None,
) -> AskAccepted:
    """Ask the session, creating it with `config` (and `snapshot`) if it does not run yet.

    Raises:
        WorkflowUpdateFailedError: the session rejected the ask (`busy`, `invalid_input`, ...).
        CliError: no worker accepted the ask in time.
    """
    asking = sessions.ask(client, session_id, ask_input, agent_id=agent_id, config=config, snapshot=snapshot)
    try:
        return await asyncio.wait_for(asking, ASK_TIMEOUT_S)
    except TimeoutError as error:
        raise CliError(f"no answer from session {session_id} in time: {NO_WORKER_HINT}") from error


@dataclass(frozen=True)
class Asker:
    """How this process asks one session: the config that creates it, the overrides of each ask."""

    client: Client
    session_id: str
    agent_id: str
    config: AgentConfig
    overrides: dict[str, JsonValue]
    snapshot: str | None = None

    @property
    def handle(self) -> WorkflowHandle[Any, Any]:
        """The session's workflow handle (for queries and the acknowledging Updates)."""
        return self.client.get_workflow_handle(self.session_id)

    async def ask(self, query: str, request_id: str | None = None) -> AskAccepted:
        """Ask `query` (see `ask`)."""
        ask_input = AskInput(query=query, request_id=request_id, overrides=self.overrides)
        return await ask(
            self.client,
            self.session_id,
            ask_input,
            agent_id=self.agent_id,
            config=self.config,
            snapshot=self.snapshot,
        )


async def open_asker(
    address: str,
    namespace: str,
    session_id: str,
    flags: inputs.AgentFlags,
    agent_id: str,
    snapshot: str | None,
) -> tuple[Asker, bool]:
    """Connect and prepare the asks of a session; True when they create one on a default demo agent.

    A new session is created by the first ask with the whole config of `flags` (the
    demo notice is shown if it is the demo); a running one keeps its own config and
    gets the options the user passed as the per-request overrides of every ask.
    """
    config, demo = inputs.resolve_config(flags)
    explicit = inputs.explicit_settings(flags)
    client = await ops.open_client(address, namespace)
    running = await is_running(client, session_id)
    if running and snapshot is not None:
        err_console.print("note: --snapshot is ignored, the session already runs", style="dim", markup=False)
    if not running and demo:
        err_console.print(demo_notice(config), markup=False, soft_wrap=True, style="bold")
    asker = Asker(client, session_id, agent_id, config, explicit if running else {}, snapshot)
    return asker, demo and not running


async def await_result(client: Client, session_id: str, request_id: str) -> RequestRecord:
    """The request's record once it has finished (the session keeps the last 100)."""
    return await sessions.await_result(client, session_id, request_id)


async def follow_request(
    client: Client, session_id: str, accepted: AskAccepted, out: Console, address: str
) -> RequestRecord:
    """Print the trace of the request's run live, until the session has its record; return it."""
    run = client.get_workflow_handle(accepted.run_workflow_id)
    record = await_result(client, session_id, accepted.request_id)
    return await ops.watch(run, record, out, address)


async def status(handle: WorkflowHandle[Any, Any]) -> SessionStatus:
    """The `status` query."""
    raw: object = await handle.query("status", result_type=SessionStatus, rpc_timeout=QUERY_TIMEOUT)
    return raw if isinstance(raw, SessionStatus) else SessionStatus.model_validate(raw)


async def thread(handle: WorkflowHandle[Any, Any], since_seq: int = 0) -> list[Entry]:
    """The `thread` query: entries with seq >= `since_seq`."""
    raw: object = await handle.query("thread", ThreadQuery(since_seq=since_seq), rpc_timeout=QUERY_TIMEOUT)
    return ops.ENTRIES.validate_python(raw)


async def requests(handle: WorkflowHandle[Any, Any]) -> list[RequestRecord]:
    """The `requests` query: the records the session keeps, oldest first."""
    raw: object = await handle.query("requests", rpc_timeout=QUERY_TIMEOUT)
    return RECORDS.validate_python(raw)


async def export(
    handle: WorkflowHandle[Any, Any], context_ref: str | None = None, ttl_s: float | None = None
) -> ExportResult:
    """The `export` Update: a signed snapshot token of a lane's context."""
    payload = ExportInput(context_ref=context_ref, ttl_s=ttl_s)
    raw: object = await sessions.update(handle, "export", payload, ExportResult)
    return raw if isinstance(raw, ExportResult) else ExportResult.model_validate(raw)
