"""`Agents`: the typed client of agents made at run time: versions, `latest`, roll back.

    async with Agents(client=temporal_client, task_queue="react-agent") as agents:   # REACT_STORE_URL
        await agents.create("helper", config, created_by="carol", note="first")    # 1
        await agents.publish("helper", config2, created_by="carol")                # 2, now latest
        await agents.set_latest("helper", 1)                                       # roll back
        record = await agents.get("helper")                                        # latest, versions

The versions live in the store (`store.agent_versions`, docs/agent-versions.md); a version's config
is checked whole before anything is written: the `AgentConfig` model (an unknown field refused by
name), the run's rules (`contracts.config_rules.config_problems`), and, with a Temporal `client`,
the workers' tools and agent profiles (`check_on_workers`, the `AgentConfigCheck` workflow: the
gateway's check too). Refusals are `store.StoreError`s by code (`invalid_input`, `unknown_tool`,
`unknown_agent`, `unknown_version`, `agent_exists`); nothing is written.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from types import TracebackType
from typing import Final

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from contracts import AgentConfig
from contracts.agent_profiles import AGENT_CHECK_WORKFLOW_TYPE, AgentCheckResult
from contracts.config_rules import config_problems
from contracts.errors import INVALID_INPUT, UNAVAILABLE
from store.agent_versions import AgentRecord, AgentVersions, ResolvedVersion, check_config, open_versions
from store.backend import Backend
from store.errors import StoreInputError, StoreUnavailableError
from store.memory_store import backend_for
from store.settings import store_url

__all__ = ["CHECK_TIMEOUT_S", "Agents", "check_on_workers", "checked_config"]

CHECK_TIMEOUT_S: Final = 30.0
"""How long the workers' check of a config's tools and profiles may take (`AgentConfigCheck`)."""


async def check_on_workers(client: Client, task_queue: str, config: AgentConfig) -> AgentCheckResult:
    """What the workers of `task_queue` find wrong with `config`'s tools and agent profiles (none: empty).

    A config naming no tool and no profile is not sent (nothing to check).

    Raises:
        StoreUnavailableError: `unavailable`: no worker answered in time, or Temporal did not.
    """
    if not config.tools and all(agent.config is not None for agent in config.agents):
        return AgentCheckResult()
    try:
        return await client.execute_workflow(
            AGENT_CHECK_WORKFLOW_TYPE,
            config,
            id=f"agent-check/{uuid.uuid4().hex}",
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=CHECK_TIMEOUT_S),
            result_type=AgentCheckResult,
        )
    except (RPCError, WorkflowFailureError):
        raise StoreUnavailableError(
            "no worker checked the config's tools in time; try again", UNAVAILABLE
        ) from None


async def checked_config(config: object, client: Client | None = None, task_queue: str = "") -> AgentConfig:
    """`config` checked whole: the model, the run's rules, then (with `client`) the workers' registries.

    Raises:
        StoreInputError: by code (`invalid_input`, `payload_too_large`, `unknown_tool`, `unknown_agent`).
        StoreUnavailableError: the workers' check did not answer.
    """
    checked = check_config(config)
    problems = config_problems(checked)
    if problems:
        raise StoreInputError("; ".join(problems), INVALID_INPUT)
    if client is not None:
        found = await check_on_workers(client, task_queue, checked)
        if found.code is not None:
            raise StoreInputError(found.message or found.code, found.code)
    return checked


class Agents:
    """The agents made at run time on the store `url` names (default `REACT_STORE_URL`), opened when used."""

    def __init__(self, url: str | None = None, *, client: Client | None = None, task_queue: str = "") -> None:
        """Bind the store (and, for the workers' check of tools, a Temporal client and task queue)."""
        self._url = url
        self._client = client
        self._task_queue = task_queue
        self._backend: Backend | None = None
        self._versions: AgentVersions | None = None
        self._lock = asyncio.Lock()

    async def _store(self) -> AgentVersions:
        async with self._lock:
            if self._versions is None:
                backend = backend_for(self._url or store_url())
                try:
                    self._versions = await open_versions(backend)
                except BaseException:
                    await backend.close()
                    raise
                self._backend = backend
            return self._versions

    async def create(self, name: str, config: object, *, created_by: str, note: str | None = None) -> int:
        """Make the agent `name` with version 1 (its latest); returns 1."""
        checked = await checked_config(config, self._client, self._task_queue)
        return await (await self._store()).create(name, checked, created_by=created_by, note=note)

    async def publish(self, name: str, config: object, *, created_by: str, note: str | None = None) -> int:
        """Publish a new version of `name` and point `latest` at it; its number."""
        checked = await checked_config(config, self._client, self._task_queue)
        return await (await self._store()).publish(name, checked, created_by=created_by, note=note)

    async def set_latest(self, name: str, version: object) -> int:
        """Point `latest` of `name` at one of its versions (roll back or forward); the version.

        `version` is checked: an integer from 1 (else `invalid_input`).
        """
        return await (await self._store()).set_latest(name, version)

    async def get(self, name: str) -> AgentRecord | None:
        """The agent and its versions, oldest first; None when there is no such agent."""
        return await (await self._store()).get(name)

    async def names(self) -> list[tuple[str, int]]:
        """Every agent made at run time, by name, with its `latest`."""
        return await (await self._store()).names()

    async def resolve(self, name: str, version: int | None = None) -> ResolvedVersion | None:
        """The version an ask runs (`version`, else the latest) and its config; None: no such agent."""
        return await (await self._store()).resolve(name, version)

    async def close(self) -> None:
        """Close the store's connection, if it was opened."""
        if self._backend is not None:
            backend, self._backend, self._versions = self._backend, None, None
            await backend.close()

    async def __aenter__(self) -> Agents:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()
