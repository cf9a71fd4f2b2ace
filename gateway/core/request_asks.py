"""The request core's ask: the busy policy, the principal's active-request slots, a reused request id.

The busy policy (`on_busy`, and `mode` for a steering ask) and the stale check
(`expected_last_request`) are the session's; a request id names an earlier request only with
the same message (else `request_id_reused`: nothing is asked).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clients.inputs import new_id
from clients.session_ask import ask_input
from contracts.errors import QUOTA_EXCEEDED, REQUEST_ID_REUSED
from contracts.session import QUERY_PREVIEW_CHARS, AskAccepted, AskInput, OnBusy
from contracts.signals import SteerMode
from conversation.attachments import Attachment
from gateway.context import GatewayContext
from gateway.core.request_reads import RequestReads
from gateway.core.threads import Thread, temporal_reads
from gateway.errors import GatewayError
from gateway.guard.quotas import ActiveRequests

__all__ = ["RequestAsks"]

log = logging.getLogger(__name__)


class RequestAsks:
    """Asking a thread: one place for every protocol (the owner of the active-request slots' client)."""

    def __init__(self, ctx: GatewayContext, reads: RequestReads) -> None:
        """The asks of the gateway `ctx`."""
        self._reads = reads
        self._active = ActiveRequests(ctx.settings.identity.quotas, ctx.client, ctx.settings.task_queue)

    async def ask(
        self,
        thread: Thread,
        text: str,
        *,
        request_id: str | None = None,
        on_busy: OnBusy = "reject",
        mode: SteerMode = "queue",
        expected_last_request: str | None = None,
        source: str | None = None,
        webhook_url: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> AskAccepted:
        """Ask `text` under the busy policy; what the session did with it.

        `attachments` are the user message's files, taken in before (`gateway.core.attachments`).

        `request_id` is the idempotency key: asking again with it answers with the same
        request, if the message is the same. With `on_busy="steer"`, `mode="interrupt"` steers
        the running request cutting its model call in flight (nothing running: it is asked).
        `webhook_url` gets the request's signed webhooks (its end; an approval that waits),
        checked by the session against the deployment's allow-list.

        Raises:
            GatewayError: the session's refusal (`busy`, `stale`, `ask_queue_full`,
                `invalid_input`, `payload_too_large`, ...), `request_id_reused`, `unavailable`,
                `quota_exceeded` (429: the principal's active requests are at the limit, nothing
                is asked; a steering ask still steers the running request).
        """
        if attachments and on_busy == "steer":
            raise GatewayError.invalid_input(
                "a message with files cannot steer a running request: ask it with on_busy `enqueue`"
            )
        if on_busy == "steer" and mode == "interrupt":
            steered = await self._steer_running(thread, text, source, "interrupt")
            if steered is not None:
                return steered
        given = request_id
        if self._active.enabled:
            request_id = request_id or new_id()  # the slot's holder: the request this ask makes
            steered = await self._hold(thread, request_id, text, source, on_busy, mode)
            if steered is not None:
                return steered
        asked: str | AskInput = text
        if thread.agent_version is not None:  # the version's config, on this request only
            asked = ask_input(
                text,
                request_id=request_id,
                on_busy=on_busy,
                expected_last_request=expected_last_request,
                webhook_url=webhook_url,
            ).model_copy(
                update={
                    "agent_version": thread.agent_version,
                    "version_config": thread.config,
                    "attachments": list(attachments),
                }
            )
        try:
            with temporal_reads():
                if not isinstance(asked, str):
                    accepted = await self._reads.session(thread).ask(
                        asked, config=thread.config, agent_id=thread.agent
                    )
                else:
                    accepted = await self._reads.session(thread).ask(
                        text,
                        config=thread.config,
                        agent_id=thread.agent,
                        request_id=request_id,
                        on_busy=on_busy,
                        expected_last_request=expected_last_request,
                        webhook_url=webhook_url,
                        attachments=list(attachments),
                    )
        except GatewayError:
            if request_id is not None:
                await self._active.release(thread.principal.name, thread.session_id, request_id)
            raise
        if request_id is not None and (
            accepted.request_id != request_id or accepted.disposition == "steered"
        ):
            await self._active.release(thread.principal.name, thread.session_id, request_id)
        if given is not None and accepted.request_id == given:
            await self._same_message(thread, given, text)
        return accepted

    async def _hold(
        self, thread: Thread, request_id: str, text: str, source: str | None, on_busy: OnBusy, mode: SteerMode
    ) -> AskAccepted | None:
        """Take the request's active slot; at the limit, a steering ask steers the running request.

        Raises:
            GatewayError: 429 `quota_exceeded` (nothing is asked), 503 `unavailable`.
        """
        try:
            await self._active.hold(thread.principal.name, thread.session_id, request_id)
        except GatewayError as refused:
            if refused.code != QUOTA_EXCEEDED or on_busy != "steer":
                raise
            steered = await self._steer_running(thread, text, source, mode)  # it makes no new request
            if steered is None:
                raise
            return steered
        return None

    async def _same_message(self, thread: Thread, request_id: str, text: str) -> None:
        """Refuse an ask whose request id names an earlier request with another message.

        The session answers a known request id with that request (a retried ask re-attaches);
        its record's query preview says whether the message is the same. The check is read
        after the ask: a new request's record always matches, so only a reused id is refused.
        When the record cannot be read (Temporal does not answer), the ask stands as the
        session answered it: refusing would tell the caller that nothing was asked.

        Raises:
            GatewayError: `request_id_reused` (nothing was asked).
        """
        try:
            record = await self._reads.record(thread, request_id)
        except GatewayError:
            log.warning("could not read request %s of %s to check its message", request_id, thread.session_id)
            return
        if record.query_preview != text[:QUERY_PREVIEW_CHARS]:
            raise GatewayError.refused(
                REQUEST_ID_REUSED,
                f"request id {request_id!r} names an earlier request with another message: "
                "give a new id (nothing was asked)",
            )

    async def _steer_running(
        self, thread: Thread, text: str, source: str | None, mode: SteerMode
    ) -> AskAccepted | None:
        """Steer the running request (`mode`); None when nothing runs."""
        try:
            status = await self._reads.status(thread)
        except GatewayError:
            return None  # no session yet: the ask starts it
        if status.active_request_id is None or status.active_run_workflow_id is None:
            return None
        ack = await self._reads.session(thread).steer(
            text, mode=mode, expected_request_id=status.active_request_id, source=source
        )
        if ack.status != "queued":
            return None
        return AskAccepted(
            request_id=status.active_request_id,
            run_workflow_id=status.active_run_workflow_id,
            disposition="steered",
            input_id=ack.input_id,
        )
