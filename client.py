"""Durable ReAct's typed Python client, and (run as a script) its command line.

    from client import AgentConfig, Runs, Sessions, connect

    temporal = await connect()                     # TEMPORAL_ADDRESS, TLS, payload store, encryption
    result = await Runs(temporal).run("What is 6 * 7?", AgentConfig(model="openai/gpt-4o-mini"))
    answer = await Sessions(temporal).get("agent-42").ask_sync("Hi!", config=AgentConfig(model="..."))
    async for event in (await Runs(temporal).start("Hi!", AgentConfig(model="...", stream=True))).events():
        ...                                        # DeltaEvent (text as it comes) or TraceItem

Everything a caller needs is importable from here: `connect`, `Runs`, `Sessions` and `Schedules`,
their handles, `RejectedError`, and the payload and result models. Importing this
module loads neither the CLI (typer, rich) nor litellm. `python client.py --help`
runs the command line (`cli/`). See docs/client.md.
"""

from clients.base import Timeouts
from clients.errors import RejectedError
from clients.output import output_as
from clients.runs import RunHandle, Runs
from clients.schedules import Schedules
from clients.sessions import SessionHandle, Sessions, session_workflow_id
from clients.stream import SessionEvent, TextAssembler
from contracts import (
    Ack,
    AgentConfig,
    ModelSettings,
    Outcome,
    RunError,
    RunResult,
    RunState,
    ScriptToolCall,
    ScriptTurn,
    ThreadPage,
    Trace,
    TraceEvent,
    Usage,
)
from contracts.approval import ApproveInput, PendingApproval
from contracts.call_texts import CallText
from contracts.output import OutputSpec
from contracts.schedules import CalendarSpec, Firing, FiringResult, ScheduleView
from contracts.session import AskAccepted, ExportResult, RequestRecord, RequestResult, SessionStatus
from contracts.stream import DeltaEvent, StreamEvent, ToolCallDelta, TraceItem
from conversation import (
    Context,
    ContextModifyInput,
    ContextOpEntry,
    ContextPolicy,
    Entry,
    Message,
    MessageEntry,
    ToolCall,
)
from hosting.connection import connect

__all__ = [
    "Ack",
    "AgentConfig",
    "ApproveInput",
    "AskAccepted",
    "CalendarSpec",
    "CallText",
    "Context",
    "ContextModifyInput",
    "ContextOpEntry",
    "ContextPolicy",
    "DeltaEvent",
    "Entry",
    "ExportResult",
    "Firing",
    "FiringResult",
    "Message",
    "MessageEntry",
    "ModelSettings",
    "Outcome",
    "OutputSpec",
    "PendingApproval",
    "RejectedError",
    "RequestRecord",
    "RequestResult",
    "RunError",
    "RunHandle",
    "RunResult",
    "RunState",
    "Runs",
    "ScheduleView",
    "Schedules",
    "ScriptToolCall",
    "ScriptTurn",
    "SessionEvent",
    "SessionHandle",
    "SessionStatus",
    "Sessions",
    "StreamEvent",
    "TextAssembler",
    "ThreadPage",
    "Timeouts",
    "ToolCall",
    "ToolCallDelta",
    "Trace",
    "TraceEvent",
    "TraceItem",
    "Usage",
    "connect",
    "output_as",
    "session_workflow_id",
]

if __name__ == "__main__":
    from cli.session_commands import app

    app()
