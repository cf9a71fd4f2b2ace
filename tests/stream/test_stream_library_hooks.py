"""The private parts of `temporalio.contrib.workflow_streams` the run's stream relies on are still there.

`workflows.run.stream.RunStream` calls five private `WorkflowStream` methods and re-registers
the library's handler names (`workflows.run.stream_handlers`); `temporalio` is pinned, and
this test fails on an upgrade that renames, removes or reshapes any of them.
"""

from __future__ import annotations

import inspect

from temporalio.contrib.workflow_streams import PollInput, PollResult, PublishInput, WorkflowStream
from temporalio.contrib.workflow_streams import _stream as library  # pyright: ignore[reportPrivateUsage]

from contracts.stream import POLL_NAME, PUBLISH_SIGNAL
from workflows.run.stream_handlers import LIBRARY_HOOKS

EXPECTED_PARAMETERS = {
    "_on_publish": ["self", "payload"],
    "_on_poll": ["self", "payload"],
    "_collect_batch": ["self", "payload"],
    "_validate_poll": ["self", "_payload"],
    "_on_offset": ["self"],
}


def test_every_private_method_the_run_stream_calls_exists_with_its_parameters() -> None:
    assert set(LIBRARY_HOOKS) == set(EXPECTED_PARAMETERS)
    for name, parameters in EXPECTED_PARAMETERS.items():
        method = getattr(WorkflowStream, name, None)
        assert callable(method), f"WorkflowStream.{name} is gone"
        assert list(inspect.signature(method).parameters) == parameters, name
    assert inspect.iscoroutinefunction(WorkflowStream._on_poll)  # pyright: ignore[reportPrivateUsage]


def test_the_handler_names_and_wire_types_are_the_libraries() -> None:
    assert library._PUBLISH_SIGNAL == PUBLISH_SIGNAL  # pyright: ignore[reportPrivateUsage]
    assert library._POLL == POLL_NAME  # pyright: ignore[reportPrivateUsage]
    assert {f for f in PublishInput.__dataclass_fields__} == {"items", "publisher_id", "sequence"}
    assert {f for f in PollInput.__dataclass_fields__} == {"topics", "from_offset"}
    assert {f for f in PollResult.__dataclass_fields__} == {"items", "next_offset", "more_ready"}
