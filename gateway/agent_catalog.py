"""The gateway's agents, one resolver for every route: code profiles (read-only) and agents made at run time.

`{agent}` in every route is `name` or `name@N` (`parse_agent_ref`). `AgentCatalog.resolve` is the
one rule from it to the config a request runs: a code profile (`--agents`, registered at start) is
answered from memory, without the store (a store that is down never stops one); any other name is
looked up in the store (`store.agent_versions`): `name` is its `latest` at that moment, `name@N`
version N. A code profile has no versions: `profile@N` is `unknown_version`.

An agent made at run time is the deployment's, as a code profile is: every principal with
`agents:ask` lists, reads and asks it; `agents:manage` creates it, publishes versions and moves
`latest` (`gateway.agents`). A name a code profile has cannot be made at run time
(`read_only_agent`), so a name means one agent.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from contracts import AgentConfig
from contracts.agent_profiles import AGENT_CHECK_WORKFLOW_TYPE, AgentCheckResult
from contracts.errors import READ_ONLY_AGENT, UNKNOWN_AGENT, UNKNOWN_VERSION
from contracts.ids import AGENT_NAME_PATTERN
from gateway.errors import GatewayError
from gateway.settings import GatewaySettings
from store import StoreError, StoreUnavailableError
from store.agent_versions import AgentRecord, AgentVersions, check_config, check_name, open_versions
from store.backend import Backend
from store.memory_store import backend_for
from store.settings import store_url
from workflows.validation import config_problems

__all__ = ["AgentCatalog", "AgentRef", "ResolvedAgent", "parse_agent_ref"]

log = logging.getLogger(__name__)
VERSION_SEPARATOR: Final = "@"
_VERSION = re.compile(r"^[1-9][0-9]{0,8}$")
RETRY_AFTER_S: Final = 5
CHECK_TIMEOUT_S: Final = 30.0
"""How long the worker's check of a config's tools and profiles may take (`AgentConfigCheck`)."""


@dataclass(frozen=True)
class AgentRef:
    """What a route's `{agent}` names: the agent, and a version (None: the latest at each ask)."""

    name: str
    version: int | None = None


@dataclass(frozen=True)
class ResolvedAgent:
    """The agent a request runs: its name, its version (None: a code profile) and its config."""

    name: str
    version: int | None
    config: AgentConfig


def parse_agent_ref(text: str) -> AgentRef:
    """`name` or `name@N` (N from 1), each part whole (`fullmatch`).

    Raises:
        GatewayError: 400 `invalid_input` naming the rule.
    """
    name, sep, version = text.partition(VERSION_SEPARATOR)
    if not AGENT_NAME_PATTERN.fullmatch(name) or (sep and not _VERSION.fullmatch(version)):
        raise GatewayError.invalid_input(
            f"an agent must be NAME or NAME@VERSION: NAME matching {AGENT_NAME_PATTERN.pattern}, "
            "VERSION a number from 1"
        )
    return AgentRef(name, int(version) if sep else None)


def _refusal(error: StoreError) -> GatewayError:
    if isinstance(error, StoreUnavailableError):
        message = "the store of agents made at run time is unavailable right now; try again"
        return GatewayError(503, error.code, message, {"Retry-After": str(RETRY_AFTER_S)})
    return GatewayError.refused(error.code, error.message)


class AgentCatalog:
    """The code profiles of the settings and the agents of the store (opened on first use)."""

    def __init__(self, settings: GatewaySettings, client: Client) -> None:
        """The catalog of a gateway with `settings` (its `agents`, its `memory_store_url`) on `client`."""
        self._client = client
        self._task_queue = settings.task_queue
        self._profiles = settings.agents
        self._url = settings.memory_store_url
        self._versions: AgentVersions | None = None
        self._backend: Backend | None = None
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

    def is_profile(self, name: str) -> bool:
        """Whether `name` is a code profile (read-only)."""
        return name in self._profiles

    async def resolve(self, agent: str) -> ResolvedAgent:
        """The agent a route's `{agent}` names, resolved (the one rule: see the module docstring).

        Raises:
            GatewayError: 400 `invalid_input` (off the pattern), 404 `unknown_agent`, 404
                `unknown_version`, 503 `unavailable` (the store did not answer).
        """
        ref = parse_agent_ref(agent)
        profile = self._profiles.get(ref.name)
        if profile is not None:
            if ref.version is not None:
                raise GatewayError.refused(
                    UNKNOWN_VERSION,
                    f"{ref.name!r} is a code profile: it has no versions (ask it as {ref.name!r})",
                )
            return ResolvedAgent(ref.name, None, profile)
        try:
            found = await (await self._store()).resolve(ref.name, ref.version)
        except StoreError as error:
            raise _refusal(error) from None
        if found is None:
            raise GatewayError(404, UNKNOWN_AGENT, f"this gateway offers no agent {ref.name!r}")
        return ResolvedAgent(found.name, found.version, found.config)

    async def listing(self) -> list[dict[str, object]]:
        """Every agent: code profiles (`read_only`) then agents made at run time (with `latest`), by name.

        A store that does not answer lists the code profiles only (the chat page still opens).
        """
        shown: list[dict[str, object]] = [
            {"name": name, "kind": "profile", "read_only": True} for name in sorted(self._profiles)
        ]
        try:
            made = await (await self._store()).names()
        except StoreUnavailableError:
            log.warning("the store of agents made at run time did not answer: listing the code profiles only")
            made = []
        for name, latest in made:
            shown.append({"name": name, "kind": "runtime", "read_only": False, "latest": latest})
        return shown

    async def record(self, name: str) -> AgentRecord:
        """An agent made at run time and its versions.

        Raises:
            GatewayError: 400 `invalid_input`, 404 `unknown_agent`, 409 `read_only_agent` (a profile), 503.
        """
        self._writable(name, "has no versions")
        try:
            found = await (await self._store()).get(name)
        except StoreError as error:
            raise _refusal(error) from None
        if found is None:
            raise GatewayError(404, UNKNOWN_AGENT, f"this gateway offers no agent {name!r}")
        return found

    async def create(self, name: object, config: object, note: object, created_by: str) -> int:
        """Make the agent `name` with version 1; returns 1 (nothing is written on a refusal).

        Raises:
            GatewayError: 400 `invalid_input` (the name, the config, an unknown tool...), 409
                `agent_exists` / `read_only_agent`, 503.
        """
        if not isinstance(name, str):
            raise GatewayError.invalid_input("name must be a string")
        checked = await self._checked(name, config, note)
        try:
            return await (await self._store()).create(name, checked, created_by=created_by, note=_note(note))
        except StoreError as error:
            raise _refusal(error) from None

    async def publish(self, name: str, config: object, note: object, created_by: str) -> int:
        """Publish a new version of `name` (latest); its number.

        Raises:
            GatewayError: 400 `invalid_input`, 404 `unknown_agent`, 409 `read_only_agent`, 503.
        """
        checked = await self._checked(name, config, note)
        try:
            return await (await self._store()).publish(name, checked, created_by=created_by, note=_note(note))
        except StoreError as error:
            raise _refusal(error) from None

    async def set_latest(self, name: str, version: object) -> int:
        """Point `latest` of `name` at `version` (roll back or forward).

        Raises:
            GatewayError: 400 `invalid_input`, 404 `unknown_agent` / `unknown_version`, 409
                `read_only_agent`, 503 `unavailable`.
        """
        self._writable(name, "is read-only")
        try:
            return await (await self._store()).set_latest(name, version)
        except StoreError as error:
            raise _refusal(error) from None

    def _writable(self, name: str, what: str) -> None:
        try:
            check_name(name)
        except StoreError as error:
            raise _refusal(error) from None
        if name in self._profiles:
            raise GatewayError.refused(
                READ_ONLY_AGENT, f"{name!r} is a code profile (registered at start): it {what} at run time"
            )

    async def _checked(self, name: str, config: object, note: object) -> AgentConfig:
        """The config, checked whole: its model, the run's own rules, then the worker's tools and profiles."""
        self._writable(name, "is read-only")
        if note is not None and not isinstance(note, str):
            raise GatewayError.invalid_input("note must be a string")
        try:
            checked = check_config(config)
        except StoreError as error:
            raise _refusal(error) from None
        problems = config_problems(checked)
        if problems:
            raise GatewayError.invalid_input("; ".join(problems))
        await self._worker_check(checked)
        return checked

    async def _worker_check(self, config: AgentConfig) -> None:
        """Refuse a config naming a tool or an agent profile the workers do not have (by name)."""
        if not config.tools and all(agent.config is not None for agent in config.agents):
            return
        try:
            found = await self._client.execute_workflow(
                AGENT_CHECK_WORKFLOW_TYPE,
                config,
                id=f"agent-check/{uuid.uuid4().hex}",
                task_queue=self._task_queue,
                execution_timeout=timedelta(seconds=CHECK_TIMEOUT_S),
                result_type=AgentCheckResult,
            )
        except (RPCError, WorkflowFailureError):
            raise GatewayError.unavailable() from None
        if found.code is not None:
            raise GatewayError.refused(found.code, found.message or found.code)

    async def close(self) -> None:
        """Close the store's connection, if it was opened."""
        if self._backend is not None:
            backend, self._backend, self._versions = self._backend, None, None
            await backend.close()


def _note(note: object) -> str | None:
    return note if isinstance(note, str) else None
