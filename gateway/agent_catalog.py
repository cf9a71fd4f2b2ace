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

import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Final, TypeVar

from temporalio.client import Client

from clients.agents import Agents
from contracts import AgentConfig
from contracts.errors import READ_ONLY_AGENT, UNKNOWN_AGENT, UNKNOWN_VERSION
from contracts.ids import AGENT_NAME_PATTERN
from gateway.errors import GatewayError
from gateway.settings import GatewaySettings
from store import StoreError, StoreUnavailableError
from store.agent_versions import AgentRecord, check_name

__all__ = ["AgentCatalog", "AgentRef", "ResolvedAgent", "parse_agent_ref"]

log = logging.getLogger(__name__)
VERSION_SEPARATOR: Final = "@"
_VERSION = re.compile(r"^[1-9][0-9]{0,8}$")
RETRY_AFTER_S: Final = 5
_T = TypeVar("_T")


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
    """The code profiles of the settings and the agents of the store (the typed client's `Agents`)."""

    def __init__(self, settings: GatewaySettings, client: Client) -> None:
        """The catalog of a gateway with `settings` (its `agents`, its `memory_store_url`) on `client`."""
        self._profiles = settings.agents
        self._agents = Agents(settings.memory_store_url, client=client, task_queue=settings.task_queue)

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
                message = f"{ref.name!r} is a code profile: it has no versions (ask it as {ref.name!r})"
                raise GatewayError.refused(UNKNOWN_VERSION, message)
            return ResolvedAgent(ref.name, None, profile)
        found = await _answered(self._agents.resolve(ref.name, ref.version))
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
            made = await self._agents.names()
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
        found = await _answered(self._agents.get(name))
        if found is None:
            raise GatewayError(404, UNKNOWN_AGENT, f"this gateway offers no agent {name!r}")
        return found

    async def create(self, name: object, config: object, note: object, created_by: str) -> int:
        """Make the agent `name` with version 1; returns 1 (nothing is written on a refusal).

        Raises:
            GatewayError: 400 `invalid_input` (the name, the config), 400 `unknown_tool`, 404
                `unknown_agent` (a profile the config names), 409 `agent_exists` / `read_only_agent`, 503.
        """
        if not isinstance(name, str):
            raise GatewayError.invalid_input("name must be a string")
        self._writable(name, "is read-only")
        return await _answered(self._agents.create(name, config, created_by=created_by, note=_note(note)))

    async def publish(self, name: str, config: object, note: object, created_by: str) -> int:
        """Publish a new version of `name` (latest); its number.

        Raises:
            GatewayError: 400 `invalid_input` / `unknown_tool`, 404 `unknown_agent`, 409 `read_only_agent`,
                503 `unavailable`.
        """
        self._writable(name, "is read-only")
        return await _answered(self._agents.publish(name, config, created_by=created_by, note=_note(note)))

    async def set_latest(self, name: str, version: object) -> int:
        """Point `latest` of `name` at `version` (roll back or forward).

        Raises:
            GatewayError: 400 `invalid_input`, 404 `unknown_agent` / `unknown_version`, 409
                `read_only_agent`, 503 `unavailable`.
        """
        self._writable(name, "is read-only")
        return await _answered(self._agents.set_latest(name, version))

    def _writable(self, name: str, what: str) -> None:
        try:
            check_name(name)
        except StoreError as error:
            raise _refusal(error) from None
        if name in self._profiles:
            raise GatewayError.refused(
                READ_ONLY_AGENT, f"{name!r} is a code profile (registered at start): it {what} at run time"
            )

    async def close(self) -> None:
        """Close the store's connection, if it was opened."""
        await self._agents.close()


async def _answered(call: Awaitable[_T]) -> _T:
    """The store call's result; its refusal as a `GatewayError` (503 with `Retry-After` when it is down)."""
    try:
        return await call
    except StoreError as error:
        raise _refusal(error) from None


def _note(note: object) -> str | None:
    if note is not None and not isinstance(note, str):
        raise GatewayError.invalid_input("note must be a string")
    return note
