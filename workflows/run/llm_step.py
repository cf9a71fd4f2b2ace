"""One LLM call of a run as a step that an interrupting steer can cut short.

The call runs in a task of its own. A steer with `mode: interrupt` cancels that task
(the activity hears it with `TRY_CANCEL`, so the run does not wait for it); what the
call had streamed so far (`RunStream.partial`: exactly what subscribers saw) becomes an
assistant entry marked `interrupted`. When none of the call's deltas reached the run
(its worker publishes them to the live channel), a local activity cuts the call in the
channel and reads its text there (`activities.llm.live_partial`: the channel refuses the
call's later batches, so the entry is again exactly what followers saw). The loop goes on
to drain the steer and call the model again in the same run. An interrupt is not a
failure: no retry is used, and an interrupted call holds no tool calls, so nothing is
left without a result.
The interrupted call counts as an iteration and an LLM call; its token usage is not
known (a cancelled stream reports none), so it is estimated (`usage_limits.interrupted_usage`:
the view's input estimate and what it had streamed) and counted like a reported one.

Context-window overflow is recovered in place: when the provider says the request
does not fit (`context_window_exceeded`), the step halves the input budget of the
run's view (`ModelCalls.shrink_budget`, for the rest of the run: the model's window is
evidently smaller than the policy said), projects the lane again and calls once more,
at most once per step. The thread keeps every message; only the view shrinks. When
the smaller view is no smaller (nothing left to drop), or the second call overflows
too, the run fails with `context_window_exceeded`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

from contracts import LLMResponse
from contracts.activities import CUT_STREAMED_CALL
from contracts.errors import CONTEXT_WINDOW_EXCEEDED
from contracts.llm import CutStreamedCall
from contracts.transform import RequestChanges
from conversation import ModelView
from workflows.activity_calls import call_activity
from workflows.failures import cut_short, run_error
from workflows.run.ledger import RunLedger
from workflows.run.llm_requests import ModelCalls
from workflows.run.record import RunRecord
from workflows.run.stream import RunStream
from workflows.run.trace_log import preview
from workflows.run.usage_limits import interrupted_usage

PATCH_INTERRUPTED_USAGE = "interrupted-usage-estimated"
"""A call cut short by an interrupting steer counts its estimated usage (before: none)."""
PATCH_LIVE_PARTIAL = "interrupted-text-from-live-channel"
"""A streamed call cut short with none of its deltas at the run reads its text from the live channel."""


class LLMStep:
    """Makes the run's LLM calls and interrupts the one in flight on request."""

    def __init__(
        self,
        model: ModelCalls,
        record: RunRecord,
        ledger: RunLedger,
        stream: RunStream,
        on_call: Callable[[], None],
        prepare: Callable[[ModelView], Awaitable[RequestChanges | None]] | None = None,
    ) -> None:
        """Bind the run's parts; `on_call` hears that a call is about to start (for the details).

        `prepare` runs before each call on its view and may end the run (usage limits,
        the request transformer); the changes it answers (the transformer's) go with that call.
        """
        self._model = model
        self._prepare = prepare
        self._record = record
        self._ledger = ledger
        self._stream = stream
        self._on_call = on_call
        self._task: asyncio.Task[LLMResponse] | None = None
        self._interrupted = False

    @property
    def in_flight(self) -> bool:
        """Whether a call is running and has not been interrupted already."""
        return self._task is not None and not self._task.done() and not self._interrupted

    def interrupt(self) -> bool:
        """Cancel the call in flight; False when there is none."""
        if not self.in_flight:
            return False
        assert self._task is not None
        self._interrupted = True
        self._task.cancel()
        return True

    async def call(self, model_name: str) -> LLMResponse | None:
        """Call the model on the projected context; None when an interrupt cut the call short.

        Raises:
            ActivityError: the call failed (after Temporal's retries); a context-window
                overflow only when a smaller view did not help.
        """
        view = await self._model.view(self._record.context)
        try:
            return await self._send(view, model_name)
        except ActivityError as err:
            if run_error(err).type != CONTEXT_WINDOW_EXCEEDED:
                raise
            smaller = await self._smaller_view(view)
            if smaller is None:
                raise
        return await self._send(smaller, model_name)

    async def _smaller_view(self, view: ModelView) -> ModelView | None:
        """The view under half the budget, recorded; None when it is no smaller."""
        self._model.shrink_budget(view.meta.estimated_tokens)
        smaller = await self._model.view(self._record.context)
        if smaller.meta.estimated_tokens >= view.meta.estimated_tokens:
            return None
        data = {
            "tokens_before": view.meta.estimated_tokens,
            "tokens_after": smaller.meta.estimated_tokens,
            "budget": smaller.meta.budget,
            "messages_before": len(view.messages),
            "messages_after": len(smaller.messages),
        }
        self._record.event("context_overflow_recovered", data=data)
        return smaller

    async def _send(self, view: ModelView, model_name: str) -> LLMResponse | None:
        self._ledger.check_cancel()
        changes: RequestChanges | None = None
        if self._prepare is not None:
            changes = await self._prepare(view)
            self._ledger.check_cancel()
        index = self._ledger.count_llm_call()
        meta = view.meta.model_dump(mode="json")
        self._record.event(
            "llm_started", data={"model": model_name, "call": index, "messages": len(view.messages), **meta}
        )
        self._on_call()
        self._stream.call_started(index)
        self._interrupted = False
        self._task = asyncio.create_task(self._model.call(view, self._ledger.iteration, index, changes))
        try:
            response = await self._task
        except (asyncio.CancelledError, CancelledError, ActivityError) as err:
            if not cut_short(err, self._interrupted):
                raise  # a failure, or the run itself is being cancelled
            await self._record_interrupted(index, view)
            return None
        finally:
            self._task = None
            self._stream.call_ended()
        self._ledger.add_usage(response.usage)
        data: dict[str, Any] = {
            "call": index,
            "finish_reason": response.finish_reason,
            "tool_calls": [preview(call.name) for call in response.tool_calls][:20],
            "content": preview(response.content),
            "content_chars": len(response.content),  # a follower tells whether it has all the text
            "total_tokens": response.usage.total_tokens,
        }
        self._record.event("llm_completed", data=data)
        return response

    async def _record_interrupted(self, index: int, view: ModelView) -> None:
        """Keep what the call had streamed (what a person saw) as an `interrupted` assistant entry.

        Its usage is estimated and counted (histories from before counted none).
        """
        partial = self._stream.partial
        if partial is not None and partial.call != index:
            partial = None
        text = partial.text if partial is not None else ""
        cut = partial is not None and partial.cut
        if (
            partial is not None
            and partial.streamed
            and not partial.received
            and workflow.patched(PATCH_LIVE_PARTIAL)
        ):
            try:
                published = await call_activity(CUT_STREAMED_CALL, CutStreamedCall(call=index), local=True)
            except ActivityError:  # the text is lost, the interrupt is not
                workflow.logger.warning("the text of interrupted call %d could not be read", index)
            else:
                text, cut = published.text, published.cut
        if workflow.patched(PATCH_INTERRUPTED_USAGE):
            self._ledger.add_usage(interrupted_usage(view.meta.estimated_tokens, text, self._ledger.usage))
        seq: int | None = None
        if text:
            refs = {"interrupted": "true", "llm_call": str(index)}
            if cut:
                refs["cut"] = "true"
            seq = self._record.append("assistant", text, refs=refs).seq
        self._record.event(
            "llm_interrupted", data={"call": index, "chars": len(text), "seq": seq, "content": preview(text)}
        )
