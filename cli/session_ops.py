"""The Temporal side of the session commands: prepare the asks of a session, follow a request.

Everything else goes through the typed client (`clients.sessions.SessionHandle`); the
CLI never imports workflow code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pydantic import JsonValue, TypeAdapter
from rich.console import Console
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from cli import inputs, ops
from cli.common import Target
from cli.demo import demo_notice
from cli.errors import err_console
from cli.option_groups import SessionOptions
from clients.sessions import SessionHandle
from contracts import AgentConfig
from contracts.session import AskAccepted, AskInput, RequestRecord, RequestResult

DESCRIBE_TIMEOUT = timedelta(seconds=10)
RECORDS = TypeAdapter(list[RequestRecord])


async def is_running(client: Client, session_id: str) -> bool:
    """Whether the session exists and runs, so an ask reaches it instead of creating it."""
    try:
        description = await client.get_workflow_handle(session_id).describe(rpc_timeout=DESCRIBE_TIMEOUT)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND and not error.message.lower().startswith("namespace"):
            return False
        raise
    return description.raw_description.workflow_execution_info.status == (
        WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    )


@dataclass(frozen=True)
class Asker:
    """How this process asks one session: the config that creates it, the overrides of each ask."""

    client: Client
    session: SessionHandle
    agent_id: str
    config: AgentConfig
    overrides: dict[str, JsonValue]
    snapshot: str | None = None
    stream: bool = True
    webhook_url: str | None = None
    """A new session's default webhook."""

    @property
    def session_id(self) -> str:
        """The session's workflow id."""
        return self.session.workflow_id

    async def ask(self, ask: AskInput) -> AskAccepted:
        """Send `ask` (over this asker's overrides), creating the session with its config if it does not run.

        Raises:
            RejectedError: the ask is over a limit or the session refused it (`busy`, `stale`, ...).
        """
        if self.overrides:
            ask = ask.model_copy(update={"overrides": {**self.overrides, **ask.overrides}})
        return await self.session.ask(
            ask,
            config=self.config,
            agent_id=self.agent_id,
            snapshot=self.snapshot,
            session_webhook_url=self.webhook_url,
        )


async def open_asker(
    target: Target, session_id: str, options: SessionOptions, stream: bool
) -> tuple[Asker, bool]:
    """Connect and prepare the asks of a session; True when they create one on a default demo agent.

    A new session is created by the first ask with the whole config of `options` (the
    demo notice is shown if it is the demo); a running one keeps its own config and
    gets the options the user passed as the per-request overrides of every ask.
    """
    flags = options.agent.flags(stream)
    config, demo = inputs.resolve_config(flags)
    explicit = inputs.explicit_settings(flags)
    client = await ops.open_client(target.address, target.namespace)
    running = await is_running(client, session_id)
    if running and options.snapshot is not None:
        err_console.print("note: --snapshot is ignored, the session already runs", style="dim", markup=False)
    if running and options.session_webhook_url is not None:
        note = "note: --session-webhook-url is ignored, the session already runs (see `webhook`)"
        err_console.print(note, style="dim", markup=False)
    if not running and demo:
        err_console.print(demo_notice(config), markup=False, soft_wrap=True, style="bold")
    session = ops.sessions_of(client).get(session_id)
    overrides = explicit if running else {}
    asker = Asker(
        client,
        session,
        options.agent_id,
        config,
        overrides,
        options.snapshot,
        stream,
        options.session_webhook_url,
    )
    return asker, demo and not running


async def follow_request(
    asker: Asker, accepted: AskAccepted, out: Console, address: str, on_event: ops.OnEvent = None
) -> RequestResult:
    """Print the request's run live (stream, or trace), until the session has its record; return it.

    `on_event` sees each trace event printed (see `ops.watch`).
    """
    run = ops.following(asker.client, accepted.run_workflow_id)
    outcome = asker.session.await_result(accepted.request_id)
    return await ops.watch(run, outcome, out, address, stream=asker.stream, on_event=on_event)
