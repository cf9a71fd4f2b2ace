"""The interrupt's read of a cut call's text from the live channel (a local activity of the run).

When the worker has a live channel, the LLM activity publishes its deltas there and the run
never sees them (`activities.llm.delta_publisher`). An interrupting steer still records what the
call had streamed as the `interrupted` assistant entry: the run asks this activity, which cuts
the call in the channel (its later batches are refused) and answers the text of its latest
attempt, so the entry is exactly what followers saw. Without a channel, or when the channel
cannot be reached, it answers nothing found (the entry is then left out, as for a call that had
streamed nothing).
"""

from __future__ import annotations

import logging

from temporalio import activity

from contracts.activities import CUT_STREAMED_CALL_ACTIVITY
from contracts.limits import MAX_PARTIAL_CHARS
from contracts.llm import CutStreamedCall, StreamedText
from live.channel import LiveChannel

_log = logging.getLogger(__name__)


class LivePartialActivity:
    """Cuts a streamed call in the worker's live channel and reads what it had published."""

    def __init__(self, channel: LiveChannel | None) -> None:
        """Use the worker's `channel` (None: the worker has none, and nothing is ever found)."""
        self._channel = channel

    @activity.defn(name=CUT_STREAMED_CALL_ACTIVITY)
    async def cut_streamed_call(self, request: CutStreamedCall) -> StreamedText:
        """Close call `request.call` of the calling run to further deltas and answer its text."""
        workflow_id = activity.info().workflow_id
        if self._channel is None or workflow_id is None:
            return StreamedText()
        try:
            published = await self._channel.cut_call(workflow_id, request.call)
        except Exception as error:  # the channel is down: the interrupt goes on without the text
            _log.warning("live channel: cannot read the text of call %d (%s)", request.call, error)
            return StreamedText()
        text = published.text[:MAX_PARTIAL_CHARS]
        return StreamedText(text=text, cut=len(text) < len(published.text), found=bool(published.text))
