"""Following a run through its live stream: trace lines as they are recorded, the LLM's text as it comes.

Trace events print as the polling follower prints them (one line each, `cli.render_trace`).
The text of the LLM call in flight is shown below them in a rich `Live` region that grows
with each delta and disappears when the call ends (its `llm_completed` line and the final
answer carry the text from then on). On a console that is not a terminal the region is
never drawn, so piped output holds the trace lines only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from cli import render
from clients.stream import TextAssembler
from contracts import TraceEvent
from contracts.call_texts import CallText
from contracts.stream import DeltaEvent, TraceItem

# Lines of the terminal left to the trace lines above the live text.
RESERVED_LINES = 3


def trace_line(out: Console, item: TraceItem) -> None:
    """Print one trace event as a live trace line."""
    event = item.event
    out.print(render.event_line(event), style=render.event_style(event.kind), markup=False, soft_wrap=True)


def _tail(text: Text, out: Console) -> Text:
    """The last lines of `text` that fit the terminal (a long answer scrolls, the region stays on screen)."""
    height = max(out.height - RESERVED_LINES, 1)
    lines = text.wrap(out, max(out.width, 1))
    if len(lines) <= height:
        return text
    return Text("\n").join(lines[-height:])


def call_view(call: CallText | None, out: Console) -> RenderableType:
    """What the live region shows of the call in flight: thinking (dim), tool calls, then the text."""
    if call is None:
        return Text("")
    parts: list[Text] = []
    if call.thinking:
        parts.append(Text(call.thinking, style="dim italic"))
    for tool in call.tool_calls.values():
        parts.append(Text(f"-> {tool['name'] or '?'}({render.preview(tool['arguments'])})", style="yellow"))
    if call.text:
        parts.append(Text(call.text))
    if call.attempt > 1:
        parts.insert(0, Text(f"(attempt {call.attempt})", style="dim"))
    return Group(*(_tail(part, out) for part in parts))


async def show_stream(
    events: AsyncIterator[DeltaEvent | TraceItem],
    out: Console,
    on_event: Callable[[TraceEvent], None] | None = None,
) -> int:
    """Print a run's events until its stream ends; the seq of the last trace event printed (0: none).

    `on_event` is called with each trace event once its line is printed (the chat asks for
    approvals there).
    """
    assembler = TextAssembler()
    last_seq = 0
    # Refreshed on each change: a line printed above the region redraws it from its last refresh.
    with Live(Text(""), console=out, transient=True, auto_refresh=False) as live:
        async for event in events:
            if assembler.add(event):  # first, so a call's end clears the region before its line prints
                live.update(call_view(assembler.current, out), refresh=True)
            if isinstance(event, TraceItem):
                trace_line(live.console, event)
                last_seq = event.event.seq
                if on_event is not None:
                    on_event(event.event)
    return last_seq
