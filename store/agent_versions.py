"""Agents made at run time: immutable versions and a `latest` pointer, in the store (schema version 3).

    versions = AgentVersions(backend_for(url))      # or AgentVersions.of(memory_store)
    await versions.create("helper", config, created_by="alice", note="first")       # version 1
    await versions.publish("helper", config2, created_by="alice")                     # version 2, latest
    await versions.set_latest("helper", 1)                                            # roll back
    resolved = await versions.resolve("helper")       # (1, config): latest
    resolved = await versions.resolve("helper", 2)    # (2, config2): pinned

Two tables, the same SQL on both databases (`Backend.transaction`, `?` marks): `agents` (one row
per agent: its `latest` and how many versions it has) and `agent_versions` (one row per version,
never updated nor deleted: its number, note, who published it, when, and its `AgentConfig` as
JSON). Publishing bumps the agent's row and inserts the version in one transaction, so two
publishers racing get two numbers; moving `latest` checks the version exists in the same statement.

A version's config is checked whole before it is written (`check_config`): an unknown field
(anywhere in it) is refused naming it, as `AgentConfig` refuses it. Every refusal is a
`StoreInputError` by name (`invalid_input`, `unknown_agent`, `unknown_version`, `agent_exists`),
and nothing is written; a database that does not answer is `StoreUnavailableError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import to_json

from contracts.agent import AgentConfig
from contracts.decoding import problem_of
from contracts.errors import AGENT_EXISTS, UNKNOWN_AGENT, UNKNOWN_VERSION
from contracts.ids import AGENT_NAME_PATTERN
from store.backend import Backend, Sql
from store.errors import StoreInputError, guarded

__all__ = [
    "MAX_NOTE_CHARS",
    "SCHEMA",
    "AgentRecord",
    "AgentVersions",
    "ResolvedVersion",
    "VersionInfo",
    "check_config",
    "check_name",
    "open_versions",
]

SCHEMA: Final = (
    """CREATE TABLE agents (
        name TEXT NOT NULL PRIMARY KEY,
        latest INTEGER NOT NULL,
        versions INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE agent_versions (
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        note TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        config TEXT NOT NULL,
        PRIMARY KEY (name, version)
    )""",
)
"""Schema version 3 of both backends (`store.sqlite_backend`, `store.postgres_backend`)."""
MAX_NOTE_CHARS: Final = 1_000
MAX_VERSIONS: Final = 100_000
"""Versions one agent may have (a bound, so a version number is never unbounded)."""
CACHED_VERSIONS: Final = 1_024
"""Decoded configs kept in memory by (name, version): a version never changes, so no lookup decodes twice."""


@dataclass(frozen=True)
class VersionInfo:
    """One version of an agent, as `GET /api/agents/{name}` lists it."""

    version: int
    note: str
    created_by: str
    created_at: float
    """Seconds since the epoch."""


@dataclass(frozen=True)
class AgentRecord:
    """An agent made at run time: its `latest` version and every version, oldest first."""

    name: str
    latest: int
    versions: list[VersionInfo]


@dataclass(frozen=True)
class ResolvedVersion:
    """The version an ask runs: its number and its config."""

    name: str
    version: int
    config: AgentConfig


def check_name(name: str) -> str:
    """`name`, if it follows the agent name rules (`contracts.ids.AGENT_NAME_PATTERN`, the whole string).

    Raises:
        StoreInputError: `invalid_input` naming the pattern.
    """
    if not isinstance(name, str) or not AGENT_NAME_PATTERN.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError(f"an agent name must match {AGENT_NAME_PATTERN.pattern}")
    return name


def check_config(config: object) -> AgentConfig:
    """The `AgentConfig` a JSON object is, checked whole: an unknown field is refused naming it.

    Raises:
        StoreInputError: `invalid_input` naming the field (and why), or a config that is not an object.
    """
    if isinstance(config, AgentConfig):
        config = config.model_dump(mode="json", exclude_unset=True)
    if not isinstance(config, Mapping):
        raise StoreInputError("config must be a JSON object (an AgentConfig)")
    try:
        return AgentConfig.model_validate(config)
    except ValidationError as error:
        problem = problem_of(error, "config")
        raise StoreInputError(problem.message, problem.code) from None


def _note(note: str | None) -> str:
    if note is None:
        return ""
    if not isinstance(note, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise StoreInputError("note must be a string")
    if len(note) > MAX_NOTE_CHARS:
        raise StoreInputError.too_large(f"note is over {MAX_NOTE_CHARS:,} characters")
    return note


def _version(version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= MAX_VERSIONS:
        raise StoreInputError(f"version must be an integer from 1 to {MAX_VERSIONS:,}")
    return version


def _config_json(config: AgentConfig) -> str:
    return to_json(config.model_dump(mode="json", exclude_unset=True)).decode()


class AgentVersions:
    """The agents made at run time, on one `Backend` (migrated: `open_versions` migrates it)."""

    def __init__(self, backend: Backend, clock: Callable[[], float] = time.time) -> None:
        """Versions on `backend`; `clock` stamps `created_at`."""
        self._backend = backend
        self._clock = clock
        self._configs: dict[tuple[str, int], AgentConfig] = {}

    async def create(self, name: str, config: object, *, created_by: str, note: str | None = None) -> int:
        """Make the agent `name` with its version 1 (latest); returns 1.

        Raises:
            StoreInputError: a bad name, config or note (`invalid_input`), or `agent_exists`
                (nothing written).
        """
        check_name(name)
        checked = check_config(config)
        text = _note(note)
        now = self._clock()

        async def work(sql: Sql) -> int:
            made = await sql.fetch(
                "INSERT INTO agents (name, latest, versions, created_by, created_at) VALUES (?, 1, 1, ?, ?) "
                "ON CONFLICT (name) DO NOTHING RETURNING name",
                (name, created_by, now),
            )
            if not made:
                message = f"an agent named {name!r} exists: publish a version to it"
                raise StoreInputError(message, AGENT_EXISTS)
            await self._insert(sql, name, 1, text, created_by, now, checked)
            return 1

        return await guarded(self._backend.transaction(work))

    async def publish(self, name: str, config: object, *, created_by: str, note: str | None = None) -> int:
        """Publish a new version of `name` (the next number) and point `latest` at it; its number.

        Raises:
            StoreInputError: a bad config or note (`invalid_input`), `unknown_agent`.
        """
        check_name(name)
        checked = check_config(config)
        text = _note(note)
        now = self._clock()

        async def work(sql: Sql) -> int:
            bumped = await sql.fetch(
                "UPDATE agents SET versions = versions + 1, latest = versions + 1 "
                "WHERE name = ? AND versions < ? RETURNING versions",
                (name, MAX_VERSIONS),
            )
            if not bumped:
                await self._require(sql, name)
                raise StoreInputError(f"agent {name!r} has {MAX_VERSIONS:,} versions: no more")
            version = int(bumped[0][0])
            await self._insert(sql, name, version, text, created_by, now, checked)
            return version

        return await guarded(self._backend.transaction(work))

    async def set_latest(self, name: str, version: object) -> int:
        """Point `latest` of `name` at one of its versions (a roll back, or forward again); the version.

        Raises:
            StoreInputError: `invalid_input` (not a version number), `unknown_agent`, `unknown_version`.
        """
        check_name(name)
        number = _version(version)

        async def work(sql: Sql) -> int:
            moved = await sql.fetch(
                "UPDATE agents SET latest = ? WHERE name = ? AND EXISTS "
                "(SELECT 1 FROM agent_versions v WHERE v.name = ? AND v.version = ?) RETURNING latest",
                (number, name, name, number),
            )
            if not moved:
                await self._require(sql, name)
                raise StoreInputError(f"agent {name!r} has no version {number}", UNKNOWN_VERSION)
            return number

        return await guarded(self._backend.transaction(work))

    async def get(self, name: str) -> AgentRecord | None:
        """The agent `name` and its versions (oldest first), or None.

        Raises:
            StoreInputError: a bad name.
        """
        check_name(name)

        async def work(sql: Sql) -> AgentRecord | None:
            rows = await sql.fetch("SELECT latest FROM agents WHERE name = ?", (name,))
            if not rows:
                return None
            versions = await sql.fetch(
                "SELECT version, note, created_by, created_at FROM agent_versions "
                "WHERE name = ? ORDER BY version",
                (name,),
            )
            return AgentRecord(
                name, int(rows[0][0]), [VersionInfo(int(v), n, by, float(at)) for v, n, by, at in versions]
            )

        return await guarded(self._backend.transaction(work))

    async def names(self) -> list[tuple[str, int]]:
        """Every agent made at run time, by name, with its `latest`."""

        async def work(sql: Sql) -> list[tuple[str, int]]:
            rows = await sql.fetch("SELECT name, latest FROM agents ORDER BY name")
            return [(str(name), int(latest)) for name, latest in rows]

        return await guarded(self._backend.transaction(work))

    async def resolve(self, name: str, version: int | None = None) -> ResolvedVersion | None:
        """The version an ask of `name` runs: `version`, or the latest; None when there is no such agent.

        One indexed read; a version's config is decoded once (versions never change).

        Raises:
            StoreInputError: `unknown_version` for a version the agent does not have.
        """
        if version is not None and (name, version) in self._configs:
            return ResolvedVersion(name, version, self._configs[(name, version)])

        async def work(sql: Sql) -> list[tuple[Any, ...]]:
            if version is None:
                return await sql.fetch(
                    "SELECT v.version, v.config FROM agents a JOIN agent_versions v "
                    "ON v.name = a.name AND v.version = a.latest WHERE a.name = ?",
                    (name,),
                )
            found = await sql.fetch(
                "SELECT version, config FROM agent_versions WHERE name = ? AND version = ?", (name, version)
            )
            if found:
                return found
            await self._require(sql, name)
            raise StoreInputError(f"agent {name!r} has no version {version}", UNKNOWN_VERSION)

        rows = await guarded(self._backend.transaction(work))
        if not rows:
            return None
        number, text = int(rows[0][0]), str(rows[0][1])
        config = self._configs.get((name, number))
        if config is None:
            config = AgentConfig.model_validate_json(text)
            if len(self._configs) >= CACHED_VERSIONS:
                self._configs.pop(next(iter(self._configs)))
            self._configs[(name, number)] = config
        return ResolvedVersion(name, number, config)

    @staticmethod
    async def _require(sql: Sql, name: str) -> None:
        if not await sql.fetch("SELECT 1 FROM agents WHERE name = ?", (name,)):
            raise StoreInputError(f"no agent named {name!r} was made at run time", UNKNOWN_AGENT)

    @staticmethod
    async def _insert(
        sql: Sql, name: str, version: int, note: str, created_by: str, now: float, config: AgentConfig
    ) -> None:
        await sql.fetch(
            "INSERT INTO agent_versions (name, version, note, created_by, created_at, config) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (name, version, note, created_by, now, _config_json(config)),
        )


async def open_versions(backend: Backend) -> AgentVersions:
    """The agent versions on `backend`, its schema migrated (the store's migrations, all of them).

    Raises:
        StoreUnavailableError: the database did not answer.
    """
    await guarded(backend.migrate())
    return AgentVersions(backend)
