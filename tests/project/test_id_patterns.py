r"""Ids are matched whole: an id with a trailing newline (`"alice\n"`) is refused by name everywhere.

Python's `$` matches before a trailing newline, so `re.match(r"^...$", "alice\n")` matches; every
id check uses `fullmatch` (`contracts.ids`). The last test keeps it so in the product's sources.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from activities.tools.tool_registry import ToolRegistry
from client import RejectedError
from clients.run_start import SESSION_RUN_ID
from clients.schedules import owner_of, schedule_id_of
from contracts.ids import PRINCIPAL_PATTERN, TOOL_NAME_PATTERN
from gateway.core import is_request_id
from gateway.errors import GatewayError
from gateway.identity.principal import Principal
from gateway.owners import check_thread_id, parse_session_id, session_id

ALICE = Principal("alice")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("owner", "name", "named"), [("alice\n", "digest", "owner"), ("alice", "digest\n", "name")]
)
def test_a_schedule_owner_or_name_with_a_trailing_newline_is_refused_by_name(
    owner: str, name: str, named: str
) -> None:
    with pytest.raises(RejectedError) as refused:
        schedule_id_of(owner, name)
    assert refused.value.code == "invalid_input" and refused.value.message.startswith(f"{named} must match")
    assert owner_of(f"schedule/{owner}/{name}") is None


def test_a_thread_or_agent_name_with_a_trailing_newline_is_refused_by_name() -> None:
    with pytest.raises(GatewayError, match="a thread id must match"):
        check_thread_id("t1\n")
    with pytest.raises(GatewayError, match="a thread id must match"):
        session_id(ALICE, "default", "t1\n")
    with pytest.raises(GatewayError, match="an agent name must match"):
        session_id(ALICE, "default\n", "t1")
    assert session_id(ALICE, "default", "t1") == "gw/alice/default/t1"
    assert parse_session_id(ALICE, "gw/alice/default/t1\n") is None
    assert parse_session_id(ALICE, "gw/alice/default\n/t1") is None
    assert parse_session_id(ALICE, "gw/alice/default/t1") == ("default", "t1")


def test_request_ids_principals_and_tool_names_with_a_trailing_newline_do_not_match() -> None:
    assert is_request_id("r-1") and not is_request_id("r-1\n")
    assert PRINCIPAL_PATTERN.fullmatch("alice") and not PRINCIPAL_PATTERN.fullmatch("alice\n")
    assert SESSION_RUN_ID.fullmatch("s-run-1") and not SESSION_RUN_ID.fullmatch("s-run-1\n")
    assert not TOOL_NAME_PATTERN.fullmatch("add\n")

    def add(a: int, b: int) -> int:
        """Add.

        Args:
            a: one.
            b: two.
        """
        return a + b

    with pytest.raises(ValueError, match="must match"):
        ToolRegistry().register(add, name="add\n")


def test_no_id_pattern_is_checked_with_match() -> None:
    """`X_PATTERN.match(` (or `X_NAME.match(`) would take a trailing newline: use `fullmatch`."""
    sources = [
        path
        for folder in (
            "activities",
            "clients",
            "contracts",
            "conversation",
            "gateway",
            "hosting",
            "live",
            "payloads",
            "workflows",
            "cli",
        )
        for path in (ROOT / folder).rglob("*.py")
    ]
    partial = re.compile(r"\b[A-Z_]*(PATTERN|NAME)\.match\(")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sources
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if partial.search(line)
    ]
    assert found == []
