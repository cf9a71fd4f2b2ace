"""The audit trail: one structured log line per state-changing call, refusal of quota, or denied token.

Each line is a JSON object on the `react.audit` logger (INFO): `time` (UTC, ISO 8601), `principal`
(null for a token that was not accepted), `action` (`ask`, `steer`, `approve`, `cancel`, `fork`,
`reset`, `configure`, `schedule`, `admin_read`, `authenticate`), `target` (one shape whatever the
protocol: `<agent>/<thread>/<request>`, with the parts the call names, so an AG-UI ask, an AI SDK
approval, an A2A task's steer and an MCP handle's cancel of one request name it alike;
`<agent>/<thread>` for a thread's fork, reset, or an ask whose request id the gateway makes; a
schedule's name and what is done to it; the path of a denied token),
`outcome` (`accepted`, `refused`, `denied`), `status` (the HTTP status), `code` (the refusal's
product code, when refused), `reason` (why a token was denied: `expired`, `audience`, ...) and
`request_id` (the caller's `X-Request-Id` when it is a plain id, else one the gateway made; the
response carries it back). Never a message's text, a token or a claim besides the principal.
A call is `accepted` when the gateway answered it with a 2xx status: a JSON-RPC or streamed answer
that refuses later (a busy session) is the protocol's own error in that answer. Route the logger
where an organization keeps audit records (a handler of the `logging` configuration, or the
OpenTelemetry logs bridge of `hosting.tracing`'s SDK).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

from starlette.types import Message, Send

__all__ = ["AUDIT_LOGGER", "AuditTrail", "Audited", "request_id_of"]

AUDIT_LOGGER = "react.audit"
REQUEST_ID_HEADER = "x-request-id"
_PLAIN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def request_id_of(headers: Mapping[str, str]) -> str:
    """The caller's request id when it is a plain id, else a new one."""
    given = headers.get(REQUEST_ID_HEADER, "")
    return given if _PLAIN_ID.match(given) else uuid.uuid4().hex


class Audited(Protocol):
    """What one line names (`gateway.guard.operations.Operation`)."""

    @property
    def action(self) -> str:
        """What is done."""
        ...

    @property
    def target(self) -> str:
        """What it is done to."""
        ...


class AuditTrail:
    """Writes audit lines to the `react.audit` logger."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        """A trail on `logger` (default: `react.audit`)."""
        self._logger = logger or logging.getLogger(AUDIT_LOGGER)

    def record(
        self,
        *,
        principal: str | None,
        action: str,
        target: str,
        outcome: str,
        status: int,
        request_id: str,
        code: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Write one line."""
        line: dict[str, object] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "principal": principal,
            "action": action,
            "target": target,
            "outcome": outcome,
            "status": status,
            "request_id": request_id,
        }
        if code is not None:
            line["code"] = code
        if reason is not None:
            line["reason"] = reason
        self._logger.info(json.dumps(line, separators=(",", ":")))

    def watch(self, send: Send, principal: str, operations: Sequence[Audited], request_id: str) -> Send:
        """`send` that writes the operations' lines when the response starts (its status is the outcome)."""

        async def audited_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                outcome = "accepted" if status < 400 else "refused"
                for operation in operations:
                    self.record(
                        principal=principal,
                        action=operation.action,
                        target=operation.target,
                        outcome=outcome,
                        status=status,
                        request_id=request_id,
                    )
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        return audited_send
