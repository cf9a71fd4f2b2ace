"""What the Web UI shows of a run or a session when it starts: one rule for the client and the session.

The summary lists an execution (model and the query's first words); the details (Markdown)
add tools, limits and the request. Both are set once at start (`static_summary`,
`static_details`), by the typed client for what it starts and by a session for its runs.
"""

from __future__ import annotations

from contracts.agent import AgentConfig

SUMMARY_QUERY_CHARS = 80
DETAILS_QUERY_CHARS = 400


def first_words(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with … when cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"


def static_summary(
    config: AgentConfig, query: str, agent_id: str | None = None, version: int | None = None
) -> str:
    """The line the Web UI lists a run (or a session, with its agent) by: model, first words of the query.

    A run of an agent's version made at run time names it first (`v3 · `).
    """
    who = f"session {agent_id} · " if agent_id is not None else ""
    which = f"v{version} · " if version is not None else ""
    return f"{who}{which}{config.model}: {first_words(query, SUMMARY_QUERY_CHARS)}"


def static_details(
    config: AgentConfig,
    query: str,
    request_id: str | None,
    agent_id: str | None = None,
    version: int | None = None,
) -> str:
    """The Web UI's details of a started run or session (Markdown): model, tools, limits, query, version."""
    tools = ", ".join(config.tools) or "none"
    lines = [
        f"**model** `{config.model}` · **tools** {tools} · **max iterations** {config.max_iterations}",
        f"**{'first query' if agent_id is not None else 'query'}** {first_words(query, DETAILS_QUERY_CHARS)}",
    ]
    if agent_id is not None:
        lines.insert(0, f"**agent** {agent_id}")
    if request_id is not None:
        lines.append(f"**request** `{request_id}`")
    if version is not None:
        lines.append(f"**agent version** {version}")
    return "\n\n".join(lines)
