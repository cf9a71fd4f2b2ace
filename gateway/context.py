"""What every route shares: the settings, the Temporal client, the typed client's scopes, the hub."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client

from clients.attachment_intake import AttachmentIntake
from clients.runs import Runs
from clients.sessions import Sessions
from contracts import AgentConfig
from contracts.errors import UNKNOWN_AGENT
from gateway.errors import GatewayError
from gateway.feed.hub import RunHub
from gateway.settings import GatewaySettings
from payloads.blob_store import BlobStore, blob_store_from_env
from store.files import FileStore

__all__ = ["GatewayContext", "agent_config", "build_context"]


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
    )


def agent_config(ctx: GatewayContext, agent: str) -> AgentConfig:
    """The config of one of the gateway's agents.

    Raises:
        GatewayError: 404 `unknown_agent`.
    """
    config = ctx.settings.agents.get(agent)
    if config is None:
        raise GatewayError(404, UNKNOWN_AGENT, f"this gateway offers no agent {agent!r}")
    return config
