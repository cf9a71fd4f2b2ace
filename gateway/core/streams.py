"""What the gateway's streaming responses (AG-UI, the AI SDK) share: refusals, keep-alives, a lost stream."""

from __future__ import annotations

from contracts.errors import INVALID_INPUT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE

__all__ = ["HTTP_REFUSALS", "LOST", "PING_S"]

PING_S = 15
"""Seconds between two SSE keep-alive comments of a streaming response."""
HTTP_REFUSALS = frozenset({INVALID_INPUT, PAYLOAD_TOO_LARGE, NOT_FOUND, UNAVAILABLE})
"""Refusals of an ask answered as HTTP errors (the session's answers, `busy` and the like, are streamed)."""
LOST = "the gateway lost the run's stream (Temporal did not answer in time)"
"""Why a stream ended early; each protocol adds how its client goes on."""
