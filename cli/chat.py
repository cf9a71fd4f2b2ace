"""The `chat` loop: each typed line is an ask; while its run streams (text as it comes), typed lines steer it.

A tool call of the run that awaits approval is asked about inline (`cli.chat_approvals`):
the next typed lines answer it (y/n/e) instead of steering; slash commands still work.

Standard input is read by a daemon thread that queues the lines, so a read that
is still pending when the chat ends never holds the process (an `input()` in the
default executor would). The loop waits on the next line and, during a run, on
the run's outcome too, whichever comes first.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from cli import ops, render, render_session, session_ops
from cli.chat_approvals import ApprovalPrompt, Decide
from cli.common import Target, out, say, say_lines
from cli.errors import CliError, err_console, error_line
from clients import session_ask
from contracts import Ack
from contracts.session import OnBusy
from contracts.whole_numbers import whole_number
from conversation import Context, Message

# Command name -> (usage, what it does); plain text is an ask (or a steer during a run).
COMMANDS: dict[str, tuple[str, str]] = {
    "steer": ("/steer TEXT", "guide the running request (plain text does the same during a run)"),
    "interrupt": ("/interrupt TEXT", "interrupt the running request's LLM call and re-plan with TEXT"),
    "inject": ("/inject TEXT", "add TEXT to the running request as new user input"),
    "cancel": ("/cancel", "cancel the running request"),
    "context replace": ("/context replace TEXT", "replace the active lane with one user message TEXT"),
    "context switch": ("/context switch LANE", "switch the conversation to lane LANE"),
    "export": ("/export", "print a snapshot token of the conversation"),
    "status": ("/status", "show the session's status"),
    "history": ("/history [SINCE]", "show the thread (from seq SINCE)"),
    "requests": ("/requests", "show the session's requests"),
    "help": ("/help", "show this help"),
    "quit": ("/quit", "leave the chat (also Ctrl-D); a running request continues"),
}
_NEEDS_TEXT = ("steer", "interrupt", "inject", "context replace", "context switch")


@dataclass(frozen=True)
class ChatCommand:
    """One typed line: `ask` (plain text) or a slash command of `COMMANDS`, with its argument."""

    name: str
    arg: str = ""


def parse_line(line: str) -> ChatCommand | None:
    """The command of a typed line; None for a blank line.

    Raises:
        CliError: an unknown slash command, or one missing its argument.
    """
    text = line.strip()
    if not text:
        return None
    if not text.startswith("/"):
        return ChatCommand("ask", text)
    word, _, rest = text[1:].partition(" ")
    name, rest = word.lower(), rest.strip()
    if name == "context":
        sub, _, rest = rest.partition(" ")
        name, rest = f"context {sub.lower()}", rest.strip()
        if name not in COMMANDS:
            raise CliError("usage: /context replace TEXT | /context switch LANE")
    if name == "exit":
        name = "quit"
    if name not in COMMANDS:
        raise CliError(f"unknown command /{word}: /help lists the commands")
    if (name in _NEEDS_TEXT and not rest) or (name == "history" and rest and whole_number(rest) is None):
        raise CliError(f"usage: {COMMANDS[name][0]}")
    return ChatCommand(name, rest)


def help_lines() -> list[str]:
    """What `/help` prints."""
    lines = [
        "type a message to ask it; while a request runs, typed text steers it",
        "a tool call awaiting approval is asked about: y approves, n denies (asks a reason), e edits it",
    ]
    return lines + [f"  {usage:<24} {text}" for usage, text in COMMANDS.values()]


class LineReader:
    """Lines of standard input, read by a daemon thread into an asyncio queue (None at EOF)."""

    def __init__(self) -> None:
        """Start reading (call from the running event loop)."""
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._pending: asyncio.Future[str | None] | None = None
        threading.Thread(target=self._read, name="chat-input", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                line: str | None = input()
            except (EOFError, OSError, ValueError):  # end of input, or stdin closed
                line = None
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the event loop is closed: the chat is over
                return
            if line is None:
                return

    def next(self) -> asyncio.Future[str | None]:
        """The pending read (started if none is): awaiting it never loses a line."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._queue.get())
        return self._pending

    def take(self) -> str | None:
        """The line of the completed pending read; the next `next` starts a new read."""
        assert self._pending is not None and self._pending.done()
        line, self._pending = self._pending.result(), None
        return line


class Chat:
    """An interactive session: asks, live traces, steering and the slash commands."""

    def __init__(
        self,
        asker: session_ops.Asker,
        target: Target,
        on_busy: OnBusy = "reject",
        expected_last_request: str | None = None,
    ) -> None:
        """Chat with `asker`'s session on `target`, asking with `on_busy` (see `expected_last_request`)."""
        self.asker = asker
        self.target = target
        self.on_busy: OnBusy = on_busy
        # With one, each ask expects it to be the session's last request (then the chat's own).
        self.expected_last_request = expected_last_request
        self.lines = LineReader()
        self.eof = False

    async def run(self) -> None:
        """Read and handle lines until /quit or the end of input."""
        say(f"session {self.asker.session_id}: type a message, /help for commands, /quit to leave", "dim")
        prompt = sys.stdin.isatty()
        while not self.eof:
            if prompt:
                out.print("> ", end="")
            line = await self._line()
            if line is None:
                break
            command = self._parse(line)
            if command is None:
                continue
            if command.name == "quit":
                break
            if command.name == "ask":
                if not await self._safely(self._turn(command.arg)):
                    break
            else:
                await self._safely(self._command(command, None))

    async def _line(self) -> str | None:
        await self.lines.next()
        line = self.lines.take()
        self.eof = line is None
        return line

    def _parse(self, line: str) -> ChatCommand | None:
        try:
            return parse_line(line)
        except CliError as error:
            err_console.print(str(error), markup=False, soft_wrap=True)
            return None

    async def _safely(self, step: Awaitable[object]) -> bool:
        """Await a step; a failure is one line and the chat goes on. False when the user quit."""
        try:
            result = await step
        except Exception as error:
            line = error_line(error, self.target.address, self.asker.session_id)
            err_console.print(line, markup=False, soft_wrap=True)
            return True
        return result is not False

    async def _turn(self, query: str) -> bool:
        """Ask `query`, stream its run (typed lines steer it), print the answer. False on /quit."""
        expected = self.expected_last_request
        ask = session_ask.ask_input(query, on_busy=self.on_busy, expected_last_request=expected)
        accepted = await self.asker.ask(ask)
        request = accepted.request_id
        if self.expected_last_request is not None:
            self.expected_last_request = request
        disposition = render_session.accepted_line(accepted)
        if disposition is not None:
            say(disposition, "dim")
        say(f"request {request} (run {accepted.run_workflow_id}): typing steers it, /cancel stops it", "dim")
        approvals = ApprovalPrompt(self._approver(accepted.run_workflow_id))
        following = asyncio.ensure_future(
            session_ops.follow_request(self.asker, accepted, out, self.target.address, approvals.seen)
        )
        try:
            while not following.done():
                reading = None if self.eof else self.lines.next()
                waits: set[asyncio.Future[Any]] = {following} if reading is None else {following, reading}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if reading is None or not reading.done():
                    continue
                line = self.lines.take()
                self.eof = line is None
                if line is not None and approvals.asking and not line.lstrip().startswith("/"):
                    await self._safely(approvals.answer(line))
                    continue
                command = self._parse(line or "")
                if command is not None and command.name == "quit":
                    say("stopped following: the request goes on in the session", "dim")
                    return False
                if command is not None:
                    command = ChatCommand("steer", command.arg) if command.name == "ask" else command
                    await self._safely(self._command(command, request))
            record = following.result()
        finally:
            if not following.done():
                following.cancel()
                await asyncio.wait([following])
        say_lines(render_session.record_lines(record), bold_first=2)
        return True

    def _approver(self, run_workflow_id: str) -> Decide:
        """How the chat decides a call of the run `run_workflow_id` (the OS user approves)."""
        run = ops.runs_of(self.asker.client).get(run_workflow_id)
        user = getpass.getuser()

        async def decide(
            call_id: str, approved: bool, reason: str | None, edited: dict[str, JsonValue] | None
        ) -> Ack:
            return await run.approve(
                call_id, approved=approved, reason=reason, arguments=edited, approver=user
            )

        return decide

    async def _command(self, command: ChatCommand, request: str | None) -> None:
        """A slash command; `request` is the running request (steer and inject expect it)."""
        session, arg = self.asker.session, command.arg
        match command.name:
            case "steer" | "interrupt":
                mode = "interrupt" if command.name == "interrupt" else "queue"
                ack = await session.steer(arg, expected_request_id=request, source="chat", mode=mode)
                say(render.ack_line(ack))
            case "inject":
                say(render.ack_line(await session.inject(arg, expected_request_id=request, source="chat")))
            case "cancel":
                say(render.ack_line(await session.cancel("cancelled from the chat")))
            case "context replace":
                replacement = Context(messages=[Message(role="user", content=arg)])
                say(render.ack_line(await session.replace_context(replacement)))
            case "context switch":
                say(render.ack_line(await session.switch_context(arg)))
            case "export":
                say((await session.export()).token)
            case "status":
                out.print(render_session.status_table(await session.status()))
            case "history":
                entries = [entry async for entry in session.thread(int(arg or 0))]
                say_lines(render_session.history_lines(entries))
            case "requests":
                out.print(render_session.requests_table(await session.requests()))
            case _:
                say_lines(help_lines())
