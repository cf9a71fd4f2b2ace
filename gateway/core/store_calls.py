"""A call to the memory store as the gateway answers it (a store that is down: 503, `Retry-After`)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Final, TypeVar

from contracts.errors import UNAVAILABLE
from gateway.errors import GatewayError
from store import StoreError, StoreUnavailableError

__all__ = ["RETRY_AFTER_S", "store_call"]

T = TypeVar("T")
RETRY_AFTER_S: Final = 5


async def store_call(call: Awaitable[T]) -> T:
    """The call's result; the store's refusal as a `GatewayError` (503 `unavailable` when it is down).

    Raises:
        GatewayError: 503 `unavailable` with `Retry-After`, or the store's refusal by its code.
    """
    try:
        return await call
    except StoreUnavailableError:
        raise GatewayError(
            503,
            UNAVAILABLE,
            "memory is unavailable right now; try again",
            {"Retry-After": str(RETRY_AFTER_S)},
        ) from None
    except StoreError as exc:
        raise GatewayError.refused(exc.code, exc.message) from None
