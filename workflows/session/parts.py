"""The components of one session, built once from its start input; each owns one kind of state.

`AgentSession` builds them and hands each to whoever needs it: `SessionLoop` (serving
requests, status, fork, export, continuing as new), `SessionControls` (the control
surface) and its own handlers (the queries read the thread, the request book and the
requests). Nothing reaches one component through another.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.session import SessionCarry, SessionInput
from conversation import ConversationState
from workflows.op_slot import OpSlot
from workflows.session.asks import SessionAsks
from workflows.session.compactor import Compactor
from workflows.session.fork import seed_fork
from workflows.session.request_book import RequestBook
from workflows.session.requests import SessionRequests
from workflows.session.run_forwarding import RunForwarder
from workflows.session.settings import SessionSettings
from workflows.session.thread import SessionThread
from workflows.session.usage_rows import UsageRows


@dataclass(frozen=True)
class SessionParts:
    """One session's components."""

    thread: SessionThread
    """The conversation (its only writer): in memory, archived, lane windows."""
    settings: SessionSettings
    """The config of the next run, ask overrides, the config controls."""
    book: RequestBook
    """The request records, the active request, the ones waiting, the ones to roll back."""
    ops: OpSlot
    """The context op deferred until the active run ends."""
    forwarder: RunForwarder
    """Control input forwarded to the active run, and its answers."""
    compactor: Compactor
    """Compaction ops of the thread's active lane."""
    requests: SessionRequests
    """Running each request as a child run; the session's usage and agent state."""
    asks: SessionAsks
    """What each ask does (`on_busy`), retried asks."""
    usage_rows: UsageRows
    """Ended requests' usage rows not written yet (carried through continue-as-new)."""

    @classmethod
    def build(cls, session: SessionInput) -> SessionParts:
        """Continue from carried state (after continue-as-new), or start an empty (or forked) conversation."""
        carry = session.carry or SessionCarry(
            conversation=ConversationState.new(session.config.system_prompt), config=session.config
        )
        thread = SessionThread(carry.conversation, carry.archive, carry.window_tokens)
        settings = SessionSettings(carry.config, session.context_policy, session.webhook_url)
        book = RequestBook(carry.requests, carry.runs_started)
        ops = OpSlot()
        forwarder = RunForwarder(book)
        compactor = Compactor(thread)
        agent_state = carry.agent_state if session.carry else session.agent_state
        usage_rows = UsageRows(carry.unwritten_usage)
        requests = SessionRequests(
            book,
            thread,
            settings,
            ops,
            forwarder,
            compactor,
            usage=carry.usage,
            agent_state=agent_state,
            usage_rows=usage_rows,
            agent_id=session.agent_id,
        )
        asks = SessionAsks(book, settings, forwarder)
        if session.carry is None:
            seed_fork(session, thread, settings.session_policy())
        return cls(thread, settings, book, ops, forwarder, compactor, requests, asks, usage_rows)
