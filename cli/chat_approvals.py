"""The chat asking its user to decide tool calls that await approval: y/n/e, inline, while the run goes on.

The followed run's `approval_requested` events queue the calls; the oldest is asked
about (`approve calculator({...})? [y]es/[n]o/[e]dit`) and the user's next lines answer
it instead of steering: `y` approves, `n` asks for an optional reason and denies, `e`
reads new JSON arguments and approves with them. An invalid JSON or a refused decision
(`invalid_arguments`: the edit does not fit the tool's schema) is reported and the
question asked again. A call decided elsewhere (`approval_decided`: another terminal,
the deadline) is dropped. The approver is the OS user name.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from cli import render
from cli.common import say
from cli.errors import CliError
from cli.inputs import json_object
from cli.render_text import preview
from contracts import Ack, TraceEvent
from contracts.errors import INVALID_ARGUMENTS, INVALID_INPUT

Decide = Callable[[str, bool, str | None, dict[str, JsonValue] | None], Awaitable[Ack]]
"""Sends one decision: (call_id, approved, reason, edited arguments) -> the run's Ack."""

Stage = Literal["verdict", "reason", "arguments"]
ASK_AGAIN = frozenset({INVALID_ARGUMENTS, INVALID_INPUT})


@dataclass(frozen=True)
class WaitingCall:
    """A tool call awaiting approval, as its `approval_requested` event shows it."""

    call_id: str
    name: str
    arguments: str

    @classmethod
    def of(cls, event: TraceEvent) -> WaitingCall:
        """The call an `approval_requested` event announces."""
        arguments = event.data.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(event.call_id or "", str(event.data.get("name", "?")), text)


class ApprovalPrompt:
    """Asks about the waiting calls of the followed run, one at a time, and sends the answers."""

    def __init__(self, decide: Decide) -> None:
        """Send decisions with `decide` (the approver is its business)."""
        self._decide = decide
        self._queued: deque[WaitingCall] = deque()
        self._seen: set[str] = set()
        self._current: WaitingCall | None = None
        self._stage: Stage | None = None  # None while a decision is being sent

    @property
    def asking(self) -> bool:
        """Whether the next typed line answers a question (rather than steering the run)."""
        return self._stage is not None

    def seen(self, event: TraceEvent) -> None:
        """A trace event of the followed run: queue a requested approval, drop one decided elsewhere."""
        call_id = event.call_id
        if call_id is None:
            return
        if event.kind == "approval_requested" and call_id not in self._seen:
            self._seen.add(call_id)
            self._queued.append(WaitingCall.of(event))
            if self._current is None:
                self._next()
        elif event.kind == "approval_decided":
            self._queued = deque(c for c in self._queued if c.call_id != call_id)
            current = self._current
            if current is not None and current.call_id == call_id and self._stage is not None:
                say(f"call {call_id} was decided meanwhile: {event.data.get('verdict', '?')}", "dim")
                self._next()

    def _next(self) -> None:
        """Ask about the next queued call, if any."""
        self._current = self._queued.popleft() if self._queued else None
        self._stage = None
        if self._current is not None:
            self._ask(self._current)

    def _ask(self, call: WaitingCall) -> None:
        self._stage = "verdict"
        say(f"approve {call.name}({preview(call.arguments)})? [y]es/[n]o/[e]dit", "bold yellow")

    async def answer(self, line: str) -> None:
        """The user's line for the current question."""
        call, text = self._current, line.strip()
        if call is None:
            return
        match self._stage:
            case "verdict":
                choice = text.lower()[:1]
                if choice == "y":
                    await self._send(call, True, None, None)
                elif choice == "n":
                    self._stage = "reason"
                    say("reason (shown to the model; Enter for none):", "bold yellow")
                elif choice == "e":
                    self._stage = "arguments"
                    say(f"new arguments for {call.name}, one JSON object:", "bold yellow")
                else:
                    say("answer y (approve), n (deny) or e (edit the arguments)", "bold yellow")
            case "reason":
                await self._send(call, False, text or None, None)
            case "arguments":
                try:
                    edited = json_object(text, "the edit")
                except CliError as error:
                    say(str(error), "red")
                    return self._ask(call)
                await self._send(call, True, None, edited)
            case None:
                pass

    async def _send(
        self, call: WaitingCall, approved: bool, reason: str | None, edited: dict[str, JsonValue] | None
    ) -> None:
        """Send one decision; a refused edit is asked about again, anything else moves on."""
        self._stage = None
        try:
            ack = await self._decide(call.call_id, approved, reason, edited)
        except Exception:
            self._ask(call)  # not sent: the question stands
            raise
        say(render.ack_line(ack), "red" if ack.status == "rejected" else "")
        if ack.status == "rejected" and ack.reason in ASK_AGAIN:
            self._ask(call)
        else:
            self._next()
