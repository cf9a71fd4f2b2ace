"""The usage patches: sessions record each request's usage, and sessions of every release still replay.

A session's request end schedules `record_usage` only when `workflow.patched("usage-record")`
holds, and since `usage-rows-aside` without waiting for it (`UsageRows`): a new execution
records the `usage-rows-aside` marker and the activities, and replays; a session of the release
that waited for each row (`usage-record` only) replays; a recorded session of before both (no
marker) replays with no activity; and without the guard the old histories would not replay
(the test has teeth).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from contracts.activities import RECORD_USAGE_ACTIVITY
from contracts.usage import USAGE_RECORD_PATCH
from testing import answer
from tests.replay.test_replay import HISTORIES, LATEST, features_of, read_history, version_replayer
from tests.session_helpers import ask_sync, new_session_id
from workflows.run.react_run import ReActRun
from workflows.session.agent_session import AgentSession
from workflows.session.requests import PATCH_USAGE_ASIDE

_SESSION_FILE = re.compile(r"^replay-(session|busy|archive|controls|forking)-[0-9a-f]{8}@")


def recorded_sessions() -> list[Path]:
    """The latest folder's session histories (their runs' files left out)."""
    return sorted(p for p in (HISTORIES / LATEST).glob("*.json") if _SESSION_FILE.match(p.name))


def patch_markers(history: WorkflowHistory, patch: str = USAGE_RECORD_PATCH) -> int:
    """How many markers of a usage patch the history holds."""
    return sum(
        event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and patch.encode() in event.SerializeToString()
        for event in history.events
    )


async def two_requests_recorded(client: Client, task_queue: str) -> WorkflowHistory:
    """A session asked twice, its history: one `record_usage` per request."""
    session_id = new_session_id()
    for text in ("first", "second"):
        done = await ask_sync(client, task_queue, session_id, text, answer(f"Answer to {text}."))
        assert done.outcome.status == "completed"
    history = await client.get_workflow_handle(session_id).fetch_history()
    assert f"activity:{RECORD_USAGE_ACTIVITY}" in features_of(history)
    scheduled = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == RECORD_USAGE_ACTIVITY
    ]
    assert len(scheduled) == 2  # one per request
    return history


async def replays_today(client: Client, history: WorkflowHistory) -> None:
    replayer = Replayer(
        workflows=[ReActRun, AgentSession],
        data_converter=client.data_converter,
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, repr(result.replay_failure)


async def test_a_new_session_writes_usage_aside_behind_its_patch_and_replays(
    client: Client, task_queue: str
) -> None:
    history = await two_requests_recorded(client, task_queue)
    assert patch_markers(history, PATCH_USAGE_ASIDE) >= 1
    await replays_today(client, history)


async def test_a_session_of_the_release_that_waited_for_each_row_replays(
    client: Client, task_queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched: Callable[[str], bool] = workflow.patched

    def that_release(name: str) -> bool:  # the worker of the release before `usage-rows-aside`
        return name != PATCH_USAGE_ASIDE and patched(name)

    with monkeypatch.context() as release:
        release.setattr(workflow, "patched", that_release)
        history = await two_requests_recorded(client, task_queue)
    assert patch_markers(history) >= 1 and not patch_markers(history, PATCH_USAGE_ASIDE)
    await replays_today(client, history)


async def test_sessions_recorded_before_the_patch_replay_without_it(tmp_path: Path) -> None:
    paths = recorded_sessions()
    assert len(paths) >= 5, [p.name for p in paths]
    for n, path in enumerate(paths):
        history = read_history(path)
        assert f"activity:{RECORD_USAGE_ACTIVITY}" not in features_of(history) and not patch_markers(history)
        replayer = version_replayer(
            path.parent, tmp_path / str(n), workflow_runner=UnsandboxedWorkflowRunner()
        )
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{path.name}: {result.replay_failure!r}"


async def test_without_the_guard_old_sessions_would_not_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched: Callable[[str], bool] = workflow.patched

    def unguarded(name: str) -> bool:
        return name == USAGE_RECORD_PATCH or patched(name)

    monkeypatch.setattr(workflow, "patched", unguarded)
    failures: list[str] = []
    for n, path in enumerate(recorded_sessions()):
        replayer = version_replayer(
            path.parent, tmp_path / str(n), workflow_runner=UnsandboxedWorkflowRunner()
        )
        result = await replayer.replay_workflow(read_history(path), raise_on_replay_failure=False)
        if isinstance(result.replay_failure, workflow.NondeterminismError):
            failures.append(path.name)
    assert failures, "an unguarded record_usage went unnoticed by every recorded session"
