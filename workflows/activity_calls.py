"""The one way workflow code calls an activity: typed by its table entry, options resolved in one order.

`call_activity(spec, arg)` schedules the activity `spec` declares (`contracts.activities`)
with its Web UI summary and the options of `workflows.activity_options.options_for`: the
table default, then the deployment override, then the run's agent config. `local=True`
runs it as a local activity (tools the worker's registry marks as fast and pure) with the
same options, less the heartbeat timeout local activities do not have.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypedDict, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy

from contracts.activities import ActivityOptions, ActivitySpec, Cancellation
from contracts.agent import AgentConfig
from workflows.activity_options import options_for

In = TypeVar("In")
Out = TypeVar("Out")

_CANCELLATION = {
    "try_cancel": workflow.ActivityCancellationType.TRY_CANCEL,
    "wait_cancellation_completed": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    "abandon": workflow.ActivityCancellationType.ABANDON,
}


class _CommonOptions(TypedDict):
    """The keyword arguments regular and local activities share."""

    result_type: type
    start_to_close_timeout: timedelta
    retry_policy: RetryPolicy
    cancellation_type: workflow.ActivityCancellationType
    summary: str


def retry_policy(options: ActivityOptions) -> RetryPolicy:
    """Temporal's retry policy for resolved `options`."""
    maximum = options.maximum_interval_s
    return RetryPolicy(
        initial_interval=timedelta(seconds=options.initial_interval_s),
        backoff_coefficient=options.backoff_coefficient,
        maximum_interval=None if maximum is None else timedelta(seconds=maximum),
        maximum_attempts=options.maximum_attempts,
    )


def _common(spec: ActivitySpec[Any, Any], arg: Any, options: ActivityOptions) -> _CommonOptions:
    cancellation: Cancellation = spec.cancellation
    return _CommonOptions(
        result_type=spec.result_type,
        start_to_close_timeout=timedelta(seconds=options.start_to_close_timeout_s),
        retry_policy=retry_policy(options),
        cancellation_type=_CANCELLATION[cancellation],
        summary=spec.summary(arg),
    )


async def call_activity(
    spec: ActivitySpec[In, Out], arg: In, *, config: AgentConfig | None = None, local: bool = False
) -> Out:
    """Run activity `spec` on `arg` and return its typed result.

    Args:
        spec: the activity's entry in the table (`contracts.activities`).
        arg: its input.
        config: the run's agent config, whose settings for this activity win (see `options_for`).
        local: run it as a local activity.

    Raises:
        ActivityError: as `workflow.execute_activity` does, when every attempt failed.
    """
    options = options_for(spec, config)
    common = _common(spec, arg, options)
    if local:
        local_result: Out = await workflow.execute_local_activity(spec.name, arg, **common)
        return local_result
    heartbeat = options.heartbeat_timeout_s
    result: Out = await workflow.execute_activity(
        spec.name,
        arg,
        heartbeat_timeout=None if heartbeat is None else timedelta(seconds=heartbeat),
        **common,
    )
    return result
