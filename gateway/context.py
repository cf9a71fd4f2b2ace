"""What every route shares: the settings, the Temporal client, the typed client's scopes, the hub."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client

from clients.attachment_intake import AttachmentIntake
from clients.runs import Runs
from clients.sessions import Sessions
from gateway.agent_catalog import AgentCatalog, ResolvedAgent
from gateway.feed.hub import RunHub
from gateway.settings import GatewaySettings
from payloads.blob_store import BlobStore, blob_store_from_env
from store.files import FileStore

__all__ = ["GatewayContext", "build_context", "resolve_agent"]


@dataclass
class GatewayContext:
    """The gateway's shared parts (no conversation state: that lives in the sessions)."""

    settings: GatewaySettings
    client: Client
    """A client from `hosting.connection.connect` (the product's data converter)."""
    sessions: Sessions
    runs: Runs
    hub: RunHub
    files: FileStore
    """The records of attached files (`store.files`, on the memory store's database)."""
    intake: AttachmentIntake
    """Files into the payload store and `files`, under the settings' attachment policy."""
    catalog: AgentCatalog
    """The agents: code profiles and agents made at run time (`gateway.agent_catalog`)."""


def build_context(
    settings: GatewaySettings, client: Client, store: BlobStore | None = None
) -> GatewayContext:
    """The context of a gateway on `client` (store: the payload store; default `REACT_PAYLOAD_STORE`'s)."""
    sessions = Sessions(client, task_queue=settings.task_queue, store=store)
    runs = Runs(client, task_queue=settings.task_queue, store=store)
    files = FileStore(settings.memory_store_url)
    intake = AttachmentIntake(settings.attachments, store or blob_store_from_env(), files)
    return GatewayContext(
        settings=settings,
        client=client,
        sessions=sessions,
        runs=runs,
        hub=RunHub(runs),
        files=files,
        intake=intake,
        catalog=AgentCatalog(settings, client),
    )


async def resolve_agent(ctx: GatewayContext, agent: str) -> ResolvedAgent:
    """The agent a route's `{agent}` names (`name` or `name@N`): the one resolver (`AgentCatalog.resolve`).

    Raises:
        GatewayError: 400 `invalid_input`, 404 `unknown_agent` / `unknown_version`, 503 `unavailable`.
    """
    return await ctx.catalog.resolve(agent)
