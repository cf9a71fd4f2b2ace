"""The public surface of the workflows, as data: names, payload models and result models.

This is what any Temporal client (any language) needs to drive the product: the task
queue, the workflow types, and for each signal, Update and query its name, the model
of its argument and of its answer. `scripts/export_schemas.py` publishes it as
`schemas/api.json` next to the JSON Schema of every model; `tests/project/test_schemas.py`
checks it against the workflows' registered handlers and the committed files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, RootModel

from contracts import (
    TASK_QUEUE,
    WORKFLOW_TYPE,
    Ack,
    CancelInput,
    RunInput,
    RunResult,
    RunState,
    Segment,
    SteerInput,
    ThreadPage,
    ThreadQuery,
    Trace,
)
from contracts.approval import ApproveInput
from contracts.branches import Branch, BranchList
from contracts.compaction import CompactInput
from contracts.effects import AgentStateValue
from contracts.session import (
    SESSION_WORKFLOW_TYPE,
    AskAccepted,
    AskInput,
    ContextQuery,
    ExportInput,
    ExportResult,
    ForkInput,
    ForkResult,
    RequestRecord,
    RequestRef,
    RequestResult,
    ResetInput,
    SessionInput,
    SessionStatus,
)
from contracts.session_config import (
    ModelInput,
    SystemPromptInput,
    ToolContextInput,
    ToolNameInput,
    WebhookInput,
)
from contracts.session_memo import RenameInput
from contracts.signals import ControlAck
from contracts.stream import EVENTS_TOPIC, StreamEvent
from conversation import Context, ContextModifyInput

HandlerKind = Literal["signal", "update", "signal_and_update", "query"]


# Defined here, on the client side, not in `contracts.stream`: pydantic registers a `RootModel[...]`
# of the product's classes in its own module for good, and the sandbox imports `contracts` afresh
# for every workflow run, so there it kept each run's classes alive (tests/replay/test_replay.py).
class StreamEventSchema(RootModel[StreamEvent]):
    """One item of a run's stream (`events` topic): a `DeltaEvent` or a `TraceItem` (for the schema)."""


@dataclass(frozen=True)
class Handler:
    """One signal, Update or query: its argument's model (None: no argument) and its answer's model.

    `many` marks an answer that is a JSON array of `result`. `internal` handlers are for
    the product's own workflows (a run answering its session), not for callers.
    """

    name: str
    kind: HandlerKind
    argument: type[BaseModel] | None
    result: type[BaseModel] | None
    summary: str
    many: bool = False
    internal: bool = False


STREAM_HANDLER_PREFIX = "__temporal_workflow_stream_"
"""The handlers a Workflow Stream registers (`temporalio.contrib.workflow_streams`'s protocol)."""


@dataclass(frozen=True)
class StreamApi:
    """A Workflow Stream the workflow hosts: its topic and the model of the items on it."""

    topic: str
    item: type[BaseModel]
    summary: str


@dataclass(frozen=True)
class WorkflowApi:
    """A workflow type: its start argument, its result (None: it never returns), its handlers.

    `stream`: the Workflow Stream it hosts, if any (its handlers are the library's, named
    `__temporal_workflow_stream_*`; subscribe with `WorkflowStreamClient`).
    """

    name: str
    argument: type[BaseModel]
    result: type[BaseModel] | None
    handlers: tuple[Handler, ...]
    stream: StreamApi | None = None


def _controls(summary_of_idle: str) -> tuple[Handler, ...]:
    return (
        Handler(
            "steer",
            "signal_and_update",
            SteerInput,
            Ack,
            f"Guide the run before its next LLM call.{summary_of_idle}",
        ),
        Handler(
            "inject", "signal_and_update", SteerInput, Ack, f"Add user input to the run.{summary_of_idle}"
        ),
        Handler("cancel", "signal_and_update", CancelInput, Ack, "End the run `cancelled`."),
        Handler(
            "approve",
            "signal_and_update",
            ApproveInput,
            Ack,
            f"Approve (maybe with edited arguments) or deny a tool call awaiting approval.{summary_of_idle}",
        ),
        Handler(
            "context_modify",
            "signal_and_update",
            ContextModifyInput,
            Ack,
            "Replace a lane's context or switch lanes (deferred while a run is active).",
        ),
    )


RUN_API = WorkflowApi(
    name=WORKFLOW_TYPE,
    argument=RunInput,
    result=RunResult,
    handlers=(
        *_controls(""),
        Handler("state", "query", None, RunState, "Status, iteration, tool calls in flight, usage, outcome."),
        Handler("thread", "query", ThreadQuery, ThreadPage, "A page of the run's thread."),
        Handler("context", "query", None, Context, "The materialized context of the active lane."),
        Handler("trace", "query", None, Trace, "The run's event trace."),
    ),
    stream=StreamApi(
        EVENTS_TOPIC,
        StreamEventSchema,
        "Trace events as they are recorded and, with `stream` on, the LLM calls' delta batches.",
    ),
)

SESSION_API = WorkflowApi(
    name=SESSION_WORKFLOW_TYPE,
    argument=SessionInput,
    result=None,
    handlers=(
        Handler("ask", "update", AskInput, AskAccepted, "Start a request (send with update-with-start)."),
        Handler("ask_sync", "update", AskInput, RequestResult, "Ask and wait for the request's end."),
        Handler("await_result", "update", RequestRef, RequestResult, "Wait for a request's end."),
        *_controls(" With no active run: rejected, `idle`."),
        Handler(
            "compact", "signal_and_update", CompactInput, Ack, "Summarise the active lane's older turns."
        ),
        Handler(
            "set_system_prompt", "signal_and_update", SystemPromptInput, Ack, "The next runs' system prompt."
        ),
        Handler("register_tool", "signal_and_update", ToolNameInput, Ack, "Offer a tool to the next runs."),
        Handler("unregister_tool", "signal_and_update", ToolNameInput, Ack, "Stop offering a tool."),
        Handler(
            "set_tool_context", "signal_and_update", ToolContextInput, Ack, "What tools get as tool_context."
        ),
        Handler("set_model", "signal_and_update", ModelInput, Ack, "The next runs' model and settings."),
        Handler(
            "set_webhook",
            "signal_and_update",
            WebhookInput,
            Ack,
            "The session's default webhook (None: none).",
        ),
        Handler("export", "update", ExportInput, ExportResult, "A signed snapshot token of a lane."),
        Handler("fork", "update", ForkInput, ForkResult, "Start a new session from the thread at a seq."),
        Handler("record_branch", "update", Branch, BranchList, "Record a branch of this family root."),
        Handler("rename", "update", RenameInput, RenameInput, "Name the thread (its listings' title)."),
        Handler(
            "reset_thread", "signal_and_update", ResetInput, Ack, "Start the conversation afresh (an op)."
        ),
        Handler("control_ack", "signal", ControlAck, None, "A run's answer to its session.", internal=True),
        Handler("status", "query", None, SessionStatus, "Idle or running, the active request, the config."),
        Handler(
            "thread", "query", ThreadQuery, ThreadPage, "A page of the thread (archived parts by reference)."
        ),
        Handler("context", "query", ContextQuery, Context, "A lane's materialized context."),
        Handler("requests", "query", None, RequestRecord, "The last 100 request records.", many=True),
        Handler("branches", "query", None, BranchList, "The branches recorded by this family root."),
        Handler("agent_state", "query", None, AgentStateValue, "The agent state tools change by effects."),
    ),
)

WORKFLOWS = (RUN_API, SESSION_API)
PUBLIC_TASK_QUEUE = TASK_QUEUE
STORED_MODELS: tuple[type[BaseModel], ...] = (Segment,)
"""Models of blobs the product writes to the payload store that callers read (archived thread segments)."""
