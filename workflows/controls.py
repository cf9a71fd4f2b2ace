"""One rule for every control of a run or a session: a signal and an acknowledging Update per name.

Each `Control` is registered as a signal (fire-and-forget) and an Update of the same
name (Temporal keeps them in separate namespaces). Both take whatever arrives
(`*args`): the Update's validator rejects a payload that does not decode or is over a
size limit (`invalid_input` / `payload_too_large`) before anything reaches history; a
signal with such a payload is dropped with a warning. A decoded payload goes to the
control's `handle`, whose `Ack` the Update returns; a signal's `Ack` is only logged
when it is a rejection, in aggregate (`SignalRefusalLog`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from temporalio import workflow

from contracts import Ack
from contracts.decoding import PayloadProblem, decode_args
from workflows.refusals import decode_or_refuse

Handle = Callable[[Any, bool], Awaitable[Ack]]
"""`handle(payload, via_signal)`: decide what to do with a decoded payload."""


@dataclass(frozen=True)
class Control:
    """A named control: its payload model and what handles a decoded payload."""

    name: str
    model: type[BaseModel]
    handle: Handle


class SignalRefusalLog:
    """Logs refused signals in aggregate: a burst of junk is a few lines, not one per signal.

    Per kind (control and reason) the 1st, 10th, 100th, ... refusal is logged, with the count so far.
    """

    def __init__(self) -> None:
        """Nothing refused yet."""
        self.counts: Counter[tuple[str, str]] = Counter()

    def note(self, warning: bool, what: str, reason: str, message: str) -> None:
        """Count one refusal; log it (as a warning, or for information) when its count is a power of ten."""
        key = (what, reason)
        self.counts[key] += 1
        count = self.counts[key]
        if count == 10 ** (len(str(count)) - 1):
            log = workflow.logger.warning if warning else workflow.logger.info
            log("%s: %s (%s); %d of this kind so far", what, reason, message, count)


def decode(control: Control, args: Sequence[Any]) -> Any:
    """The control's payload, or the named `ApplicationError` (for validators)."""
    return decode_or_refuse(args, control.model, control.name)


def register(
    controls: Sequence[Control], on_dropped: Callable[[str, PayloadProblem], None] | None = None
) -> None:
    """Register each control as a signal and an Update (call from the workflow's `__init__`).

    `on_dropped(name, problem)` hears of signals dropped for their payload (e.g. to count
    them in a trace).
    """
    log = SignalRefusalLog()
    for control in controls:

        async def on_signal(*args: Any, control: Control = control) -> None:
            try:
                payload = decode_args(args, control.model, control.name)
            except PayloadProblem as problem:
                log.note(True, f"dropped {control.name} signal", problem.code, problem.message)
                if on_dropped is not None:
                    on_dropped(control.name, problem)
                return
            ack = await control.handle(payload, True)
            if ack.status == "rejected":
                log.note(False, f"rejected {control.name} signal", ack.reason or "", ack.message or "")

        async def on_update(*args: Any, control: Control = control) -> Ack:
            return await control.handle(decode(control, args), False)

        def validate(*args: Any, control: Control = control) -> None:
            decode(control, args)

        workflow.set_signal_handler(control.name, on_signal)  # pyright: ignore[reportUnknownMemberType]
        workflow.set_update_handler(  # pyright: ignore[reportUnknownMemberType]
            control.name, on_update, validator=validate
        )
