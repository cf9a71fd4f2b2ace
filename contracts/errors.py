"""The error vocabulary: every `ApplicationError.type`, `Ack.reason`, `RunError.type` and `ToolError.type`.

One casing (snake_case), one meaning per code, used by workflows, activities, the
client and the CLI alike. docs/errors.md lists every code of `DESCRIPTIONS` and of
`SNAPSHOT_DESCRIPTIONS` (`tests/project/test_docs_errors.py` checks that it is current), so a
new code is documented where it is defined.
"""

from __future__ import annotations

from typing import Final, Literal

# ---- input and limits ---------------------------------------------------------------------
INVALID_INPUT: Final = "invalid_input"
PAYLOAD_TOO_LARGE: Final = "payload_too_large"
BLANK_CONTENT: Final = "blank_content"
UNKNOWN_TOOL: Final = "unknown_tool"
INVALID_OP: Final = "invalid_op"
UNSUPPORTED_MEDIA_TYPE: Final = "unsupported_media_type"

# ---- state of a run or session --------------------------------------------------------------
BUSY: Final = "busy"
IDLE: Final = "idle"
REQUEST_MISMATCH: Final = "request_mismatch"
QUEUE_FULL: Final = "queue_full"
SEALED: Final = "sealed"
NOT_RUNNING: Final = "not_running"
UNKNOWN_REQUEST: Final = "unknown_request"
NOTHING_TO_COMPACT: Final = "nothing_to_compact"
STALE: Final = "stale"
ASK_QUEUE_FULL: Final = "ask_queue_full"

# ---- approvals and agents -------------------------------------------------------------------
UNKNOWN_CALL: Final = "unknown_call"
APPROVAL_NOT_REQUIRED: Final = "approval_not_required"
ALREADY_DECIDED: Final = "already_decided"
DENIED: Final = "denied"
APPROVAL_TIMEOUT: Final = "approval_timeout"
UNKNOWN_AGENT: Final = "unknown_agent"
AGENT_DEPTH_EXCEEDED: Final = "agent_depth_exceeded"
AGENT_RUNS_EXCEEDED: Final = "agent_runs_exceeded"

# ---- structured output, transformers, state effects, forks, usage limits ----------------------
INVALID_OUTPUT: Final = "invalid_output"
INVALID_SCHEMA: Final = "invalid_schema"
UNKNOWN_TRANSFORMER: Final = "unknown_transformer"
TRANSFORMER_ERROR: Final = "transformer_error"
EFFECT_FORBIDDEN: Final = "effect_forbidden"
INVALID_EFFECT: Final = "invalid_effect"
SEQ_OUT_OF_RANGE: Final = "seq_out_of_range"
UNKNOWN_MESSAGE: Final = "unknown_message"
NOTHING_TO_REGENERATE: Final = "nothing_to_regenerate"
USAGE_LIMIT_EXCEEDED: Final = "usage_limit_exceeded"
POLL_BUDGET_SPENT: Final = "poll_budget_spent"

# ---- evaluations ------------------------------------------------------------------------------
INVALID_DATASET: Final = "invalid_dataset"
UNKNOWN_EVALUATOR: Final = "unknown_evaluator"
UNKNOWN_JUDGE_MODEL: Final = "unknown_judge_model"
EVAL_FAILED: Final = "eval_failed"

# ---- how a run ended ------------------------------------------------------------------------
CANCELLED: Final = "cancelled"
TIMEOUT: Final = "timeout"
INCOMPLETE_RESPONSE: Final = "incomplete_response"
ACTIVITY_ERROR: Final = "activity_error"
CHILD_FAILED: Final = "child_failed"

# ---- model providers (classified by `activities.llm.llm_errors`) --------------------------------
AUTHENTICATION: Final = "authentication"
PERMISSION_DENIED: Final = "permission_denied"
BAD_REQUEST: Final = "bad_request"
NOT_FOUND: Final = "not_found"
RATE_LIMIT: Final = "rate_limit"
CONTEXT_WINDOW_EXCEEDED: Final = "context_window_exceeded"
CONTENT_POLICY: Final = "content_policy"
SERVER_ERROR: Final = "server_error"
CONNECTION: Final = "connection"
PROVIDER_ERROR: Final = "provider_error"
SCRIPT_EXHAUSTED: Final = "script_exhausted"
MESSAGE_CACHE_MISS: Final = "message_cache_miss"
LOCAL_MODEL_UNAVAILABLE: Final = "local_model_unavailable"

# ---- tools (what the model reads in `{"ok": false, "error": {...}}`) --------------------------
INVALID_ARGUMENTS: Final = "invalid_arguments"
INVALID_RESULT: Final = "invalid_result"
TOOL_ERROR: Final = "tool_error"

# ---- storage ----------------------------------------------------------------------------------
BLOB_MISSING: Final = "blob_missing"

# ---- identity and quotas at the gateway (gateway/identity/) ----------------------------------------
FORBIDDEN: Final = "forbidden"
QUOTA_EXCEEDED: Final = "quota_exceeded"
RATE_LIMITED: Final = "rate_limited"

# ---- the HTTP gateway (gateway/) ---------------------------------------------------------------
UNAUTHORIZED: Final = "unauthorized"
UNSUPPORTED_CONTENT: Final = "unsupported_content"
REQUEST_ID_REUSED: Final = "request_id_reused"
UNAVAILABLE: Final = "unavailable"

# ---- attachments (clients.attachment_intake, for the gateway and the typed client) -------------------
TOO_MANY_ATTACHMENTS: Final = "too_many_attachments"
MEDIA_TYPE_MISMATCH: Final = "media_type_mismatch"
INVALID_ATTACHMENT: Final = "invalid_attachment"
URL_REFUSED: Final = "url_refused"
# ---- agents made at run time (store.agent_versions, gateway.core.agents) ---------------------------
UNKNOWN_VERSION: Final = "unknown_version"
AGENT_EXISTS: Final = "agent_exists"
READ_ONLY_AGENT: Final = "read_only_agent"

# ---- snapshot tokens (raised by `activities.snapshots.snapshot_token`, in check order) --------------------
SnapshotErrorCode = Literal[
    "snapshot_prefix",
    "snapshot_format",
    "snapshot_encoding",
    "snapshot_signature",
    "snapshot_payload",
    "snapshot_version",
    "snapshot_expired",
    "snapshot_legacy_thread",
    "snapshot_secret_missing",
    "snapshot_secret_insecure",
]

DESCRIPTIONS: Final[dict[str, str]] = {
    INVALID_INPUT: "Input that cannot be used: wrong shape or types, out-of-range numbers. Nothing changed.",
    PAYLOAD_TOO_LARGE: "An input over its documented size limit (named in the message). Nothing changed.",
    BLANK_CONTENT: "Steer or inject input with blank content.",
    UNKNOWN_TOOL: "A tool name the worker's registry does not have.",
    INVALID_OP: "A context operation that cannot be applied (the message says why).",
    UNSUPPORTED_MEDIA_TYPE: (
        "An attachment of a media type the deployment (`REACT_ATTACHMENT_MEDIA_TYPES`) or the agent's "
        "model does not take, naming the type (and the model) (415). Nothing was asked."
    ),
    BUSY: "The session is running another request; wait for it or cancel it.",
    IDLE: "No run is active (or the run finished before the input reached it).",
    REQUEST_MISMATCH: "`expected_request_id` names another request than the one running.",
    QUEUE_FULL: "The run already holds the maximum of queued inputs.",
    SEALED: "The run has decided to finish and takes no more input.",
    NOT_RUNNING: "The run is no longer running (or is already being cancelled).",
    UNKNOWN_REQUEST: "The session keeps no request with that id.",
    NOTHING_TO_COMPACT: "Compaction found nothing older than the kept turns.",
    STALE: "`expected_last_request` is not the session's last request: another request has run since.",
    ASK_QUEUE_FULL: "The session already holds the maximum of enqueued asks (`on_busy: enqueue`).",
    UNKNOWN_CALL: "`approve` names a call id that no tool call of the run has.",
    APPROVAL_NOT_REQUIRED: "`approve` names a tool call that needs no approval.",
    ALREADY_DECIDED: "`approve` names a call already approved, denied or timed out.",
    DENIED: "A tool call a person denied (the tool result the model reads; the reason follows).",
    APPROVAL_TIMEOUT: "A tool call nobody approved within `approval_timeout_s`, so it was denied.",
    UNKNOWN_AGENT: (
        "An agent profile the worker has not registered (`agents` of the config), "
        "or an agent the gateway does not offer (404)."
    ),
    AGENT_DEPTH_EXCEEDED: "An agent called as a tool past `max_agent_depth` (a tool result; no run starts).",
    AGENT_RUNS_EXCEEDED: (
        "An agent called as a tool when the run's tree of agents has used its `max_agent_runs` "
        "(a tool result; no run starts)."
    ),
    INVALID_OUTPUT: "The final answer did not match `output.json_schema` after the repair calls.",
    INVALID_SCHEMA: "`output.json_schema` is not a valid JSON Schema.",
    UNKNOWN_TRANSFORMER: "`request_transformer` names a transformer the worker has not registered.",
    TRANSFORMER_ERROR: "The request transformer raised, or returned changes that cannot be applied.",
    EFFECT_FORBIDDEN: "A tool's state effect on a path `effect_policy` does not allow (the model is told).",
    INVALID_EFFECT: "A tool's state effect that cannot be applied (e.g. `merge` into a non-object).",
    SEQ_OUT_OF_RANGE: "A `fork` at a seq the session's thread does not have.",
    UNKNOWN_MESSAGE: "An edit or a regenerate names a message the thread has no user message for.",
    NOTHING_TO_REGENERATE: "A regenerate of a thread with no answered request to ask again.",
    USAGE_LIMIT_EXCEEDED: "The next LLM call would exceed a cap of `usage_limits`; the run ended before it.",
    POLL_BUDGET_SPENT: (
        "A stream poll by Update refused: the run has answered its `stream_poll_updates` polls by Update; "
        "poll by query (the typed client does)."
    ),
    CANCELLED: "The run was cancelled.",
    TIMEOUT: "An LLM or tool call timed out.",
    INCOMPLETE_RESPONSE: "The model returned an empty answer without a stop reason.",
    ACTIVITY_ERROR: "An activity failed for a reason not classified otherwise.",
    CHILD_FAILED: "A session's run failed, timed out or was terminated from outside.",
    AUTHENTICATION: "The provider refused the credentials (401), or the worker has no key for the model.",
    PERMISSION_DENIED: "The provider refused the request (403).",
    BAD_REQUEST: "The provider rejected the request as malformed (400, 422).",
    NOT_FOUND: (
        "The provider does not know the model or endpoint (404); at the gateway, a thread the caller "
        "cannot see: missing and another principal's alike (404)."
    ),
    RATE_LIMIT: "The provider is rate limiting (429); retried after the delay it asks for.",
    CONTEXT_WINDOW_EXCEEDED: "The request does not fit the model's context window.",
    CONTENT_POLICY: "The provider refused the content.",
    SERVER_ERROR: "The provider failed (5xx); retried.",
    CONNECTION: "The provider could not be reached; retried.",
    PROVIDER_ERROR: "Any other provider failure; retried.",
    SCRIPT_EXHAUSTED: "The scripted model was called past the end of its script.",
    MESSAGE_CACHE_MISS: "The message cache lacks a referenced message; the run resends the call inline.",
    LOCAL_MODEL_UNAVAILABLE: (
        "The bundled local model cannot be served by this worker: not installed, or its port is taken."
    ),
    INVALID_ARGUMENTS: "Tool arguments that are not a JSON object matching the tool's schema.",
    INVALID_RESULT: "A tool returned a value that is not JSON.",
    TOOL_ERROR: "A tool failed (a `ToolFailure` without its own type, or an exception).",
    BLOB_MISSING: "A payload or message referenced by hash is not in the payload store.",
    FORBIDDEN: (
        "The caller's token lacks the scope the call needs, named in the message (403). Nothing changed."
    ),
    QUOTA_EXCEEDED: (
        "A principal's quota (active requests, tokens today, or schedules) is used up; the message names "
        "the quota and the numbers, `Retry-After` says when to try again (429; none for schedules: delete "
        "one first). Nothing was asked or created."
    ),
    RATE_LIMITED: (
        "A principal sent more requests a minute than the gateway allows (429, with `Retry-After`). "
        "Nothing was asked."
    ),
    UNAUTHORIZED: "The gateway has tokens configured and the request has no valid bearer token (401).",
    UNSUPPORTED_CONTENT: "An A2A message part the agents cannot take (an empty part). Nothing started.",
    REQUEST_ID_REUSED: (
        "A request id (an AG-UI `runId`) that names an earlier request with another message. "
        "Nothing was asked."
    ),
    UNAVAILABLE: "The gateway could not reach Temporal in time (503); try again.",
    TOO_MANY_ATTACHMENTS: (
        "A message with more files than `REACT_ATTACHMENTS_PER_MESSAGE` allows (default 10). "
        "Nothing was asked."
    ),
    MEDIA_TYPE_MISMATCH: (
        "A file whose bytes are not what its declared media type says (an image that is not one, text that "
        "is not UTF-8); the message names the file. Nothing was asked."
    ),
    INVALID_ATTACHMENT: (
        "A file that cannot be read: bad base64, a data URL without a media type, no media type at all, an "
        "empty file. The message names the file. Nothing was asked."
    ),
    URL_REFUSED: (
        "A file given by URL that is not fetched: no `REACT_ATTACHMENT_URL_ALLOW`, a destination it does not "
        "allow, a redirect, an answer that is not 2xx, a timeout. Nothing was asked."
    ),
    UNKNOWN_VERSION: (
        "`name@N` names a version the agent made at run time does not have, or a code profile "
        "(which has no versions) (404). Nothing was asked or changed."
    ),
    AGENT_EXISTS: "`POST /api/agents` with the name of an agent already made (409): publish a version to it.",
    READ_ONLY_AGENT: (
        "A write to a code profile (registered by `--agents` at start: read-only at run time), or an agent "
        "made at run time with a code profile's name (409). Nothing changed."
    ),
    INVALID_DATASET: (
        "An evaluation's dataset pydantic-evals cannot read, a case's `inputs` not a query or "
        "`{query, tool_results}`, or more than 500 cases. Nothing created."
    ),
    UNKNOWN_EVALUATOR: (
        "A dataset names an evaluator the product does not run (the message lists them). Nothing created."
    ),
    UNKNOWN_JUDGE_MODEL: (
        "An `LLMJudge` names no model, or one that is not a litellm model string. Nothing created."
    ),
    EVAL_FAILED: (
        "An evaluation could not finish (a case's scoring failed every attempt); its record says why."
    ),
}

SNAPSHOT_DESCRIPTIONS: Final[dict[SnapshotErrorCode, str]] = {
    "snapshot_prefix": "The token does not start with `rt2.` (not the current format, or not copied whole).",
    "snapshot_format": (
        "After the prefix the token does not have two parts separated by one dot (truncated or altered)."
    ),
    "snapshot_encoding": "The token holds characters that are not URL-safe base64.",
    "snapshot_signature": (
        "The signature does not match: the token was altered, or signed with another `REACT_SNAPSHOT_SECRET`."
    ),
    "snapshot_payload": "The signed content is not a snapshot this worker can read.",
    "snapshot_version": "The token is of another snapshot version; export the conversation again.",
    "snapshot_expired": "The token's `ttl_s` has passed; export the conversation again.",
    "snapshot_legacy_thread": (
        "The token carries a whole thread (an older format, which is no longer restored)."
    ),
    "snapshot_secret_missing": "The worker has no `REACT_SNAPSHOT_SECRET`.",
    "snapshot_secret_insecure": (
        "The worker's `REACT_SNAPSHOT_SECRET` is a known placeholder or shorter than 32 characters."
    ),
}
"""The snapshot token's codes (`SnapshotErrorCode`), documented in docs/errors.md's last section."""
