"""The activity table: every activity declared once, the contract between workflows and the worker.

Each `ActivitySpec` (`contracts.activity_spec`) names an activity, its input and result
types, its default options (timeouts, retry policy, cancellation type) and its Web UI
summary. Workflows call every activity through `workflows.activity_calls.call_activity`,
and the worker registers exactly the activities of `ACTIVITIES`
(`tests/worker/test_activity_table.py` checks both directions).

Options resolve in one order, each layer winning over the one before it
(`workflows.activity_options.options_for`):

1. the table default (`ActivitySpec.defaults`);
2. the deployment override (`ActivityOverride`, from the plugin's arguments or the
   environment, installed by `workflows.activity_options.ActivityOptionsInterceptor`);
3. the agent's own settings (`ActivitySpec.per_agent`: `llm_timeout_s`, `llm_max_attempts`,
   `tool_timeout_s`, `tool_max_retries`, `tool_retry_backoff_s`), when the run's `AgentConfig`
   sets them to something other than their defaults (a session's ask overrides are already
   merged into the run's config).

Workflow code imports this module, so it stays pure and light: no litellm, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from contracts.activity_spec import ActivityOptions, ActivityOverride, ActivitySpec
from contracts.activity_spec import Cancellation as Cancellation
from contracts.admission import SlotCheck, SlotsHeld
from contracts.agent import AgentConfig
from contracts.agent_profiles import AgentProfile, ResolveAgentsRequest
from contracts.approval import ArgumentsCheck, ArgumentsVerdict
from contracts.compaction import SummarizeRequest, SummarizeResult
from contracts.evals import CaseResult, CaseRun, EvalFinish
from contracts.llm import (
    CountTokensRequest,
    CutStreamedCall,
    LLMRequest,
    LLMResponse,
    ModelMedia,
    ModelMediaRequest,
    StreamedText,
    ToolSpec,
)
from contracts.memory import MemoryRecall, MemoryRecalled, MemoryToolCall
from contracts.output import OutputSpec, SchemaCheck
from contracts.retention import RetentionInput, RetentionResult
from contracts.schedules import FiringAsk, FiringResult
from contracts.session import ExportResult
from contracts.snapshot import ExportSnapshotRequest, RestoreSnapshotRequest, SnapshotPayload
from contracts.thread import Segment, SegmentRef
from contracts.tools import ResolveToolsRequest, ToolCallRequest, ToolOutcome
from contracts.transform import RequestChanges, TransformInput
from contracts.usage import UsageRecord, UsageWritten
from contracts.webhooks import WebhookDelivery, WebhookOutcome

LLM_ACTIVITY: Final = "llm_call"
TOOL_ACTIVITY: Final = "run_tool"
RESOLVE_TOOLS_ACTIVITY: Final = "resolve_tools"
EXPORT_SNAPSHOT_ACTIVITY: Final = "export_snapshot"
RESTORE_SNAPSHOT_ACTIVITY: Final = "restore_snapshot"
SUMMARIZE_ACTIVITY: Final = "summarize"
COUNT_TOKENS_ACTIVITY: Final = "count_tokens"
ARCHIVE_SEGMENT_ACTIVITY: Final = "archive_segment"
READ_SEGMENT_ACTIVITY: Final = "read_segment"
CHECK_TOOL_ARGUMENTS_ACTIVITY: Final = "check_tool_arguments"
RESOLVE_AGENTS_ACTIVITY: Final = "resolve_agents"
CHECK_OUTPUT_SCHEMA_ACTIVITY: Final = "check_output_schema"
TRANSFORM_REQUEST_ACTIVITY: Final = "transform_request"
ASK_FOR_SCHEDULE_ACTIVITY: Final = "ask_for_schedule"
DELIVER_WEBHOOK_ACTIVITY: Final = "deliver_webhook"
CUT_STREAMED_CALL_ACTIVITY: Final = "cut_streamed_call"
CHECK_ADMISSION_SLOTS_ACTIVITY: Final = "check_admission_slots"
SWEEP_IDLE_THREADS_ACTIVITY: Final = "sweep_idle_threads"
MEMORY_SAVE_ACTIVITY: Final = "memory_save"
MEMORY_SEARCH_ACTIVITY: Final = "memory_search"
MEMORY_DELETE_ACTIVITY: Final = "memory_delete"
MEMORY_RECALL_ACTIVITY: Final = "memory_recall"
RECORD_USAGE_ACTIVITY: Final = "record_usage"
MODEL_MEDIA_ACTIVITY: Final = "model_media"
SCORE_EVAL_CASE_ACTIVITY: Final = "score_eval_case"
FINISH_EVAL_ACTIVITY: Final = "finish_eval"

LLM_TIMEOUT_SLACK_S: Final = 30.0
"""An LLM activity's start-to-close timeout is the provider timeout (`llm_timeout_s`) plus this."""


class UnknownActivityError(ValueError):
    """An override names an activity that is not in the table."""


def _agent_default(field: str) -> Any:
    return AgentConfig.model_fields[field].default


def _agent_set(config: AgentConfig, field: str) -> Any:
    """The config's value of `field`, or None when it is the field's default (nothing to layer)."""
    value = getattr(config, field)
    return None if value == _agent_default(field) else value


def _llm_settings(config: AgentConfig) -> ActivityOverride:
    timeout = _agent_set(config, "llm_timeout_s")
    return ActivityOverride(
        start_to_close_timeout_s=None if timeout is None else timeout + LLM_TIMEOUT_SLACK_S,
        maximum_attempts=_agent_set(config, "llm_max_attempts"),
    )


def _tool_settings(config: AgentConfig) -> ActivityOverride:
    retries = _agent_set(config, "tool_max_retries")
    backoff = _agent_set(config, "tool_retry_backoff_s")
    return ActivityOverride(
        start_to_close_timeout_s=_agent_set(config, "tool_timeout_s"),
        maximum_attempts=None if retries is None else retries + 1,
        initial_interval_s=None if backoff is None else max(backoff, 0.001),
    )


def activity_summary(request: LLMRequest) -> str:
    """The Web UI summary of an LLM call: model and iteration, e.g. `llm gpt-4o-mini #3`.

    Lets an operator scan a run's event history without opening each payload.
    """
    return f"llm {request.model} #{request.iteration}"


def tool_activity_summary(request: ToolCallRequest) -> str:
    """The Web UI summary of a tool call: tool name and call id, e.g. `tool calculator call_0_0`."""
    return f"tool {request.call.name} {request.call.id}"


def _resolve_summary(request: ResolveToolsRequest) -> str:
    if len(request.names) == 1:
        return f"resolve tool {request.names[0]}"
    return "resolve tools"


def _archive_summary(segment: Segment) -> str:
    entries = segment.entries
    return f"archive entries {entries[0].seq}-{entries[-1].seq}" if entries else "archive entries"


_LLM = ActivityOptions(
    start_to_close_timeout_s=_agent_default("llm_timeout_s") + LLM_TIMEOUT_SLACK_S,
    heartbeat_timeout_s=10,
    maximum_attempts=_agent_default("llm_max_attempts"),
)
_TOOL = ActivityOptions(
    start_to_close_timeout_s=_agent_default("tool_timeout_s"),
    maximum_attempts=_agent_default("tool_max_retries") + 1,
    initial_interval_s=max(_agent_default("tool_retry_backoff_s"), 0.001),
)
_QUICK = ActivityOptions(start_to_close_timeout_s=10, maximum_attempts=3)
_STORE = ActivityOptions(start_to_close_timeout_s=60, maximum_attempts=3)

# name, input, result, default options, Web UI summary, per-agent settings
LLM_CALL = ActivitySpec(
    LLM_ACTIVITY,
    LLMRequest,
    LLMResponse,
    _LLM.layered({"maximum_interval_s": 60}),
    activity_summary,
    _llm_settings,
)
RUN_TOOL = ActivitySpec(
    TOOL_ACTIVITY, ToolCallRequest, ToolOutcome, _TOOL, tool_activity_summary, _tool_settings
)
RESOLVE_TOOLS = ActivitySpec(
    RESOLVE_TOOLS_ACTIVITY, ResolveToolsRequest, list[ToolSpec], _QUICK, _resolve_summary
)
EXPORT_SNAPSHOT = ActivitySpec(
    EXPORT_SNAPSHOT_ACTIVITY, ExportSnapshotRequest, ExportResult, _QUICK, lambda r: f"export {r.context_ref}"
)
RESTORE_SNAPSHOT = ActivitySpec(
    RESTORE_SNAPSHOT_ACTIVITY, RestoreSnapshotRequest, SnapshotPayload, _QUICK, lambda _: "restore snapshot"
)
SUMMARIZE = ActivitySpec(
    SUMMARIZE_ACTIVITY,
    SummarizeRequest,
    SummarizeResult,
    _LLM,
    lambda r: f"summarize {r.model}",
    _llm_settings,
)
COUNT_TOKENS = ActivitySpec(
    COUNT_TOKENS_ACTIVITY,
    CountTokensRequest,
    list[int],
    ActivityOptions(start_to_close_timeout_s=30),
    lambda r: f"count tokens ({len(r.messages)} messages)",
)
MODEL_MEDIA = ActivitySpec(
    MODEL_MEDIA_ACTIVITY, ModelMediaRequest, ModelMedia, _QUICK, lambda r: f"media of {r.model}"[:200]
)
ARCHIVE_SEGMENT = ActivitySpec(
    ARCHIVE_SEGMENT_ACTIVITY,
    Segment,
    SegmentRef,
    _STORE.layered({"maximum_attempts": 0, "maximum_interval_s": 30}),
    _archive_summary,
)
READ_SEGMENT = ActivitySpec(
    READ_SEGMENT_ACTIVITY, SegmentRef, Segment, _STORE, lambda r: f"read entries {r.first_seq}-{r.last_seq}"
)
CHECK_TOOL_ARGUMENTS = ActivitySpec(
    CHECK_TOOL_ARGUMENTS_ACTIVITY,
    ArgumentsCheck,
    ArgumentsVerdict,
    _QUICK,
    lambda r: f"check arguments of {r.name}",
)
RESOLVE_AGENTS = ActivitySpec(
    RESOLVE_AGENTS_ACTIVITY,
    ResolveAgentsRequest,
    list[AgentProfile],
    _QUICK,
    lambda r: f"resolve agents {', '.join(r.names)}"[:200],
)
CHECK_OUTPUT_SCHEMA = ActivitySpec(
    CHECK_OUTPUT_SCHEMA_ACTIVITY, OutputSpec, SchemaCheck, _QUICK, lambda r: f"check output schema {r.name}"
)
TRANSFORM_REQUEST = ActivitySpec(
    TRANSFORM_REQUEST_ACTIVITY,
    TransformInput,
    RequestChanges,
    ActivityOptions(start_to_close_timeout_s=10, maximum_attempts=1),
    lambda r: f"transform request {r.transformer} #{r.iteration}",
)
ASK_FOR_SCHEDULE = ActivitySpec(
    ASK_FOR_SCHEDULE_ACTIVITY,
    FiringAsk,
    FiringResult,
    ActivityOptions(start_to_close_timeout_s=30, maximum_attempts=10, maximum_interval_s=30),
    lambda r: f"ask {r.session_id} for schedule {r.firing.schedule_id}"[:200],
)
DELIVER_WEBHOOK = ActivitySpec(
    DELIVER_WEBHOOK_ACTIVITY,
    WebhookDelivery,
    WebhookOutcome,
    # Unlimited attempts: the activity gives up by itself after REACT_WEBHOOK_GIVE_UP_S.
    ActivityOptions(start_to_close_timeout_s=30, maximum_attempts=0, maximum_interval_s=60),
    lambda r: f"webhook {r.body.type} {r.webhook_id}"[:200],
)
CUT_STREAMED_CALL = ActivitySpec(
    CUT_STREAMED_CALL_ACTIVITY,
    CutStreamedCall,
    StreamedText,
    # A local activity on the interrupt path: quick, and a failure only loses the partial text.
    ActivityOptions(start_to_close_timeout_s=5, maximum_attempts=3, maximum_interval_s=1),
    lambda r: f"cut streamed call #{r.call}",
)
CHECK_ADMISSION_SLOTS = ActivitySpec(
    CHECK_ADMISSION_SLOTS_ACTIVITY,
    SlotCheck,
    SlotsHeld,
    # On an admit's path at the limit: quick, or the slots stay held until the next check.
    ActivityOptions(
        start_to_close_timeout_s=10, maximum_attempts=3, initial_interval_s=0.2, maximum_interval_s=1
    ),
    lambda r: f"check {len(r.slots)} admission slots",
)

SWEEP_IDLE_THREADS = ActivitySpec(
    SWEEP_IDLE_THREADS_ACTIVITY,
    RetentionInput,
    RetentionResult,
    # Many sessions a sweep: it heartbeats after each one; a retry starts the listing over.
    ActivityOptions(
        start_to_close_timeout_s=1800, heartbeat_timeout_s=120, maximum_attempts=3, maximum_interval_s=60
    ),
    lambda r: f"erase threads idle for {r.idle_s:.0f} s (at most {r.limit})",
)

# The memory tools answer a store that is down with a tool error the model reads, never by raising:
# Temporal retries only what the activity could not report (a worker lost mid-call).
_MEMORY = ActivityOptions(start_to_close_timeout_s=30, maximum_attempts=3)
MEMORY_SAVE = ActivitySpec(
    MEMORY_SAVE_ACTIVITY, MemoryToolCall, ToolOutcome, _MEMORY, lambda r: f"memory save {r.call_id}"[:200]
)
MEMORY_SEARCH = ActivitySpec(
    MEMORY_SEARCH_ACTIVITY, MemoryToolCall, ToolOutcome, _MEMORY, lambda r: f"memory search {r.call_id}"[:200]
)
MEMORY_DELETE = ActivitySpec(
    MEMORY_DELETE_ACTIVITY, MemoryToolCall, ToolOutcome, _MEMORY, lambda r: f"memory delete {r.call_id}"[:200]
)
MEMORY_RECALL = ActivitySpec(
    MEMORY_RECALL_ACTIVITY,
    MemoryRecall,
    MemoryRecalled,
    ActivityOptions(start_to_close_timeout_s=30, maximum_attempts=2),
    lambda r: f"memory recall {r.limit} for {r.scope.namespace}"[:200],
)

# A request's usage: a store that does not answer is tried a few times, then the session goes on
# without the record (docs/usage.md): a session never waits long for its bookkeeping.
RECORD_USAGE = ActivitySpec(
    RECORD_USAGE_ACTIVITY,
    UsageRecord,
    UsageWritten,
    ActivityOptions(start_to_close_timeout_s=30, maximum_attempts=5, maximum_interval_s=10),
    lambda r: f"record usage of {r.request_id}"[:200],
)
# An LLM judge may take a while; a store that does not answer is retried (the case's row is an upsert).
# It heartbeats: a case whose worker died is retried after 10 s, not after the 300 s timeout.
SCORE_EVAL_CASE = ActivitySpec(
    SCORE_EVAL_CASE_ACTIVITY,
    CaseRun,
    CaseResult,
    ActivityOptions(
        start_to_close_timeout_s=300, heartbeat_timeout_s=10, maximum_attempts=5, maximum_interval_s=30
    ),
    lambda r: f"score case {r.index} {r.case.name}"[:200],
)
FINISH_EVAL = ActivitySpec(
    FINISH_EVAL_ACTIVITY,
    EvalFinish,
    EvalFinish,
    _STORE,
    lambda r: f"finish eval {r.eval_id} {r.status}"[:200],
)

ACTIVITIES: Final[Mapping[str, ActivitySpec[Any, Any]]] = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            LLM_CALL,
            RUN_TOOL,
            RESOLVE_TOOLS,
            EXPORT_SNAPSHOT,
            RESTORE_SNAPSHOT,
            SUMMARIZE,
            COUNT_TOKENS,
            ARCHIVE_SEGMENT,
            READ_SEGMENT,
            CHECK_TOOL_ARGUMENTS,
            RESOLVE_AGENTS,
            CHECK_OUTPUT_SCHEMA,
            TRANSFORM_REQUEST,
            ASK_FOR_SCHEDULE,
            DELIVER_WEBHOOK,
            CUT_STREAMED_CALL,
            CHECK_ADMISSION_SLOTS,
            SWEEP_IDLE_THREADS,
            MEMORY_SAVE,
            MEMORY_SEARCH,
            MEMORY_DELETE,
            MEMORY_RECALL,
            RECORD_USAGE,
            MODEL_MEDIA,
            SCORE_EVAL_CASE,
            FINISH_EVAL,
        )
    }
)
"""Every activity of the product, by name."""


def check_overrides(overrides: Mapping[str, ActivityOverride]) -> None:
    """Refuse overrides of activities the table does not declare.

    Raises:
        UnknownActivityError: naming the unknown activities and the known ones.
    """
    unknown = sorted(set(overrides) - set(ACTIVITIES))
    if unknown:
        known = ", ".join(ACTIVITIES)
        raise UnknownActivityError(f"unknown activity {', '.join(map(repr, unknown))}; activities: {known}")
