"""Activity names: the contract between workflows and the worker (import-light, sandbox-safe)."""

LLM_ACTIVITY = "llm_call"
TOOL_ACTIVITY = "run_tool"
RESOLVE_TOOLS_ACTIVITY = "resolve_tools"
EXPORT_SNAPSHOT_ACTIVITY = "export_snapshot"
RESTORE_SNAPSHOT_ACTIVITY = "restore_snapshot"
SUMMARIZE_ACTIVITY = "summarize"
COUNT_TOKENS_ACTIVITY = "count_tokens"
