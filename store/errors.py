"""The store's refusals: bad input by name (nothing written), and a database that cannot be reached."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable
from typing import TypeVar

import psycopg

from contracts.errors import INVALID_INPUT, NOT_FOUND, PAYLOAD_TOO_LARGE, UNAVAILABLE


class StoreError(Exception):
    """A refusal of the store, with the product's error `code` (`contracts.errors`)."""

    code: str = INVALID_INPUT

    def __init__(self, message: str, code: str | None = None) -> None:
        """`message` says what is wrong; `code` overrides the class's."""
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class StoreInputError(StoreError):
    """Input the store refuses (`invalid_input`, or `payload_too_large` for a bound); nothing changed."""

    @classmethod
    def too_large(cls, message: str) -> StoreInputError:
        """An input over its bound (`payload_too_large`)."""
        return cls(message, PAYLOAD_TOO_LARGE)

    @classmethod
    def not_found(cls, message: str) -> StoreInputError:
        """No such item (`not_found`)."""
        return cls(message, NOT_FOUND)


class StoreUnavailableError(StoreError):
    """The database did not answer (`unavailable`): the caller may try again later."""

    code = UNAVAILABLE


_T = TypeVar("_T")


async def guarded(operation: Awaitable[_T]) -> _T:
    """The operation's result; a database that does not answer becomes `StoreUnavailableError`.

    Raises:
        StoreError: the store's own refusal, or `StoreUnavailableError`.
    """
    try:
        return await operation
    except StoreError:
        raise
    except (OSError, sqlite3.OperationalError, psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise StoreUnavailableError(f"the store did not answer: {type(exc).__name__}") from None
