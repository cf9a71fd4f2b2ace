"""The request core's operations on a thread as a whole: fork, rename, reset, erase, its webhook.

Each checks first that the thread is the caller's (`not_found` otherwise: a missing thread is
never an operation's own refusal). What erasing deletes, and in which order: `gateway.core.erase`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clients.memory import Memory
from contracts import Ack
from contracts.session import SessionStatus
from gateway.context import GatewayContext
from gateway.core.erase import Erased, ErasedPrincipal, erase_principal, erase_thread
from gateway.core.request_reads import RequestReads
from gateway.core.threads import Thread, accepted, temporal_reads
from gateway.owners import fork_session_id, parse_session_id

__all__ = ["Forked", "ThreadOperations"]


@dataclass(frozen=True)
class Forked:
    """A fork: the new thread, and the entry of the parent's thread it starts after."""

    thread: Thread
    seq: int


class ThreadOperations:
    """What a caller may do with a whole thread (the owner of the gateway's memory-store client)."""

    def __init__(self, ctx: GatewayContext, reads: RequestReads) -> None:
        """The thread operations of the gateway `ctx`."""
        self._ctx = ctx
        self._reads = reads
        self._memory: Memory | None = None

    async def fork(
        self, thread: Thread, *, seq: int | None = None, new_thread_id: str | None = None
    ) -> Forked:
        """A new thread of the caller's, starting from `thread` as it stood after entry `seq` (default: now).

        Raises:
            GatewayError: `not_found` (checked first: a missing thread is never a fork's own
                refusal), `invalid_input` (a bad or taken `new_thread_id`, or a default fork id
                that is not a thread id: pass one), `seq_out_of_range`.
        """
        await self._reads.status(thread)
        new_id = await fork_session_id(
            self._ctx.client, thread.principal, thread.agent, thread.thread_id, new_thread_id or None
        )
        with temporal_reads():
            forked = await self._reads.session(thread).fork(seq=seq, session_id=new_id)
        owned = parse_session_id(thread.principal, forked.session_id)
        assert owned is not None, "the gateway names every fork with a thread id"
        new = Thread(thread.principal, owned[0], owned[1], forked.session_id, thread.config)
        return Forked(new, forked.forked_from.seq)

    async def rename(self, thread: Thread, title: str) -> str:
        """Name the thread (its listings' `title`); the title as kept.

        Raises:
            GatewayError: `not_found` (checked first), `invalid_input` (blank, several lines),
                `payload_too_large` (over `MAX_TITLE_CHARS`).
        """
        await self._reads.status(thread)
        with temporal_reads():
            return await self._reads.session(thread).rename(title)

    async def reset(self, thread: Thread, *, reason: str | None = None) -> Ack:
        """Start the conversation afresh (`applied`, or `deferred` while a request runs).

        Raises:
            GatewayError: `not_found` (checked first), or the session's refusal.
        """
        await self._reads.status(thread)
        with temporal_reads():
            ack = await self._reads.session(thread).reset_thread(reason=reason)
        return accepted(ack, "the reset was refused")

    async def erase(self, thread: Thread, *, memories: bool = False) -> Erased:
        """Erase the thread: its session and runs (not its forks), with `memories` its memory writes.

        What is deleted, and in which order: `gateway.core.erase`.

        Raises:
            GatewayError: `not_found` (nothing is deleted), `forbidden` (`memories` without
                `memory:write`), `unavailable`.
        """
        return await erase_thread(self._ctx, self._store(), thread, memories=memories)

    async def erase_principal(self, principal: str) -> ErasedPrincipal:
        """Erase everything `principal` has: schedules, threads, memory items (`gateway.core.erase`).

        Raises:
            GatewayError: `unavailable` (ask again: it finishes what is left).
        """
        return await erase_principal(self._ctx, self._store(), principal)

    def _store(self) -> Memory:
        """The gateway's memory-store client (opened on first use)."""
        if self._memory is None:
            self._memory = Memory(self._ctx.settings.memory_store_url)
        return self._memory

    async def set_webhook(self, thread: Thread, webhook_url: str | None) -> SessionStatus:
        """Set (None: clear) the thread's default webhook for the requests asked from now on.

        Raises:
            GatewayError: `not_found` (checked first), `invalid_input` naming `webhook_url` (the
                deployment's allow-list refuses it; nothing changed).
        """
        await self._reads.status(thread)
        with temporal_reads():
            ack = await self._reads.session(thread).set_webhook(webhook_url)
        accepted(ack, "the webhook was refused")
        with temporal_reads():
            return await self._reads.session(thread).status()
