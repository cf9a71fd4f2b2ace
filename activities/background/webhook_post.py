"""`deliver_webhook`: one attempt to POST a signed webhook; Temporal retries it until it is acknowledged.

Each attempt signs the body the Standard Webhooks way (`webhook-id`: the delivery's id, the
same on every attempt, so a receiver drops duplicates; `webhook-timestamp`: this attempt's
time; `webhook-signature`: `v1,<HMAC-SHA256>` with `REACT_WEBHOOK_SECRET`), resolves the host
once, checks every address against the deployment's allow-list (`settings.webhook_policy`),
connects to the checked address, and never follows a redirect. It reads at most
`MAX_ANSWER_READ_BYTES` of the receiver's answer (its status is what counts) and closes the
connection, so a receiver answering an endless body costs a bounded buffer. A 2xx answer is
delivered. Anything else fails the attempt (Temporal retries with backoff), until
`REACT_WEBHOOK_GIVE_UP_S` after the event: then the activity returns an outcome that gives
up, with the last attempt's reason. A destination the policy refuses, a redirect, 410 Gone, a
host name that does not exist (the resolver's "no such name", not a temporary failure), or no
secret give up at once (retrying would not change them).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import aiohttp
from standardwebhooks.webhooks import Webhook
from temporalio import activity
from temporalio.exceptions import ApplicationError
from yarl import URL

from contracts.activities import DELIVER_WEBHOOK_ACTIVITY
from contracts.errors import CONNECTION
from contracts.webhooks import WebhookDelivery, WebhookOutcome
from payloads.checked_address import AddressRefusedError, checked_address
from settings.webhook_policy import SECRET_VARIABLE, WebhookPolicy

MAX_ANSWER_READ_BYTES: Final = 4_096
"""The most of a receiver's answer an attempt reads; the rest is never read (the connection is closed)."""
_READ_BUFFER_BYTES: Final = 16_384
"""aiohttp's read buffer: it stops reading the socket past this, so nothing more is ever held."""


class _GiveUp(Exception):
    """A reason no later attempt can change."""


async def _checked_address(policy: WebhookPolicy, url: URL) -> str:
    try:
        return await checked_address(policy, url)
    except AddressRefusedError as refused:
        raise _GiveUp(str(refused)) from None


async def _post(policy: WebhookPolicy, delivery: WebhookDelivery) -> int:
    """One attempt: the receiver's status code (2xx), or an exception saying why not."""
    if policy.secret is None:
        raise _GiveUp(f"no {SECRET_VARIABLE}: webhooks are not signed, so none is sent")
    url = URL(delivery.url)
    address = await _checked_address(policy, url)
    body = delivery.body.model_dump_json(exclude_none=True)
    now = datetime.now(UTC)
    signature = Webhook(policy.secret).sign(delivery.webhook_id, now, body)
    headers = {
        "content-type": "application/json",
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "host": url.raw_authority,
        "user-agent": "durable-react-webhooks",
    }
    target = url.with_host(address)
    timeout = aiohttp.ClientTimeout(total=policy.timeout_s)
    async with (
        aiohttp.ClientSession(timeout=timeout, read_bufsize=_READ_BUFFER_BYTES) as session,
        session.post(
            target,
            data=body.encode(),
            headers=headers,
            allow_redirects=False,
            server_hostname=url.host if url.scheme == "https" else None,
        ) as response,
    ):
        prefix = await response.content.read(MAX_ANSWER_READ_BYTES)
        response.close()  # never read the rest: the connection goes, with whatever it still had
        if 300 <= response.status < 400:
            raise _GiveUp(f"the receiver redirected ({response.status}); redirects are not followed")
        said = prefix[:200].decode(errors="replace").strip()
        answered = f"the receiver answered {response.status}" + (f": {said}" if said else "")
        if response.status == 410:
            raise _GiveUp(f"{answered} (Gone: the receiver asked for no more deliveries)")
        if not 200 <= response.status < 300:
            raise ConnectionError(answered)
        return response.status


@activity.defn(name=DELIVER_WEBHOOK_ACTIVITY)
async def deliver_webhook(delivery: WebhookDelivery) -> WebhookOutcome:
    """POST the webhook once; retried by Temporal until delivered or given up (the module's docstring)."""
    info = activity.info()
    policy = WebhookPolicy.from_env()
    try:
        status = await _post(policy, delivery)
    except _GiveUp as reason:
        return WebhookOutcome(delivered=False, attempts=info.attempt, reason=str(reason)[:1_000])
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as error:
        reason = f"{type(error).__name__}: {error}"[:1_000]
        waited = (datetime.now(UTC) - delivery.body.timestamp).total_seconds()
        if waited >= policy.give_up_s:
            return WebhookOutcome(
                delivered=False,
                attempts=info.attempt,
                reason=f"gave up after {waited:.0f} s ({info.attempt} attempts); last: {reason}"[:1_000],
            )
        raise ApplicationError(reason, type=CONNECTION) from None  # retried by Temporal
    return WebhookOutcome(delivered=True, status_code=status, attempts=info.attempt)
