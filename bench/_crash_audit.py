"""The crash benchmark's audit: what each run's thread, the side-effect log and its steers show."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Subject:
    """One run under test (started directly or by a session's ask) and what it left."""

    tag: str
    point: str
    workflow_id: str
    run_workflow_id: str
    session: bool
    request_id: str = ""
    steers: list[tuple[str, dict[str, Any] | None]] = field(
        default_factory=list[tuple[str, dict[str, Any] | None]]
    )
    result: dict[str, Any] = field(default_factory=dict[str, Any])
    entries: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


def audit(subject: Subject, effects: dict[str, list[str]]) -> tuple[Counter[str], list[str]]:
    """Count what the subject's thread, the side-effect log and its steers show; list what is wrong."""
    tag, counts, problems = subject.tag, Counter[str](), list[str]()
    messages: list[dict[str, Any]] = [e["payload"] for e in subject.entries if e["kind"] == "ai_message"]

    def expect_once(what: str, found: int) -> None:
        counts["duplicated"] += max(0, found - 1)
        counts["missing"] += 1 - min(1, found)
        if found != 1:
            problems.append(f"{subject.workflow_id}: {what} appears {found} times")

    seqs = [e["seq"] for e in subject.entries]
    if seqs and sorted(seqs) != list(range(seqs[0], seqs[0] + len(seqs))):
        problems.append(f"{subject.workflow_id}: seqs are not consecutive: {seqs}")
        counts["duplicated"] += len(seqs) - len(set(seqs))
        counts["missing"] += max(seqs) - min(seqs) + 1 - len(set(seqs))
    expect_once("the query", sum(m["role"] == "user" and m["content"] == f"Go {tag}." for m in messages))
    calls = Counter[str](str(c["id"]) for m in messages for c in m.get("tool_calls") or list[Any]())
    for call in (f"{tag}-a", f"{tag}-b", f"{tag}-c"):
        expect_once(f"tool call {call}", calls[call])
        expect_once(f"the result of {call}", sum(m.get("tool_call_id") == call for m in messages))
    answers = [m["content"] for m in messages if m["role"] == "assistant" and not m.get("tool_calls")]
    status = subject.result.get("outcome", {}).get("status")
    counts["completed"] += status == "completed" and answers[-1:] == [f"done {tag}"]
    if not counts["completed"]:
        problems.append(f"{subject.workflow_id}: ended {status} with answers {answers}")
    for content, ack in subject.steers:
        counts["steers"] += 1
        if ack is not None and ack.get("status") != "queued":
            problems.append(f"{subject.workflow_id}: a steer was acked {ack}")
            continue
        found = sum(m["role"] == "user" and m["content"] == content for m in messages)
        expect_once(f"steer {content!r}", found)
        counts["steers once"] += found == 1
    for label in (f"{tag}-a", f"{tag}-b"):
        keys = effects.get(label, [])
        counts["tool calls"] += 1
        counts["executions"] += len(keys)
        counts["re-executed"] += len(keys) > 1
        counts["same key"] += len(set(keys)) == 1
        if len(set(keys)) != 1:
            problems.append(f"{subject.workflow_id}: {label} ran {len(keys)} times with keys {set(keys)}")
    return counts, problems


COLUMNS = (
    ("runs", "runs"),
    ("completed", "completed"),
    ("duplicated", "duplicated entries"),
    ("missing", "missing entries"),
    ("tool calls", "tool calls (side effects)"),
    ("executions", "executions"),
    ("re-executed", "calls re-executed"),
    ("same key", "calls with one key on every execution"),
    ("steers", "steers (Update + signal)"),
    ("steers once", "steers drained exactly once"),
)


def audit_table(subjects: list[Subject], effects: dict[str, list[str]]) -> tuple[str, bool]:
    """The markdown table by crash point (and in all), and whether nothing was lost or duplicated."""
    rows: dict[str, Counter[str]] = {}
    problems: list[str] = []
    for subject in subjects:
        counts, found = audit(subject, effects)
        counts["runs"] = 1
        for key in (subject.point, "all"):
            rows.setdefault(key, Counter[str]()).update(counts)
        problems += found
    rows["all"] = rows.pop("all", Counter[str]())
    lines = ["| crash | " + " | ".join(title for _, title in COLUMNS) + " |"]
    lines.append("|---|" + "---:|" * len(COLUMNS))
    for point, counts in rows.items():
        lines.append(f"| {point} | " + " | ".join(str(counts[key]) for key, _ in COLUMNS) + " |")
    lines += [f"- {problem}" for problem in problems]
    return "\n".join(lines), not problems
