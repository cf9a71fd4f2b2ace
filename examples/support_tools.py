"""An example tools module: `python worker.py --tools examples.support_tools`.

It follows the `register(registry)` convention (see docs/tools.md) and shows the three
things a production tool needs: a schema from type hints and docstring, expected
failures the model can read (`ToolFailure`), and a side effect made safe against
Temporal's retries with the call's `idempotency_key`.

Refunds are kept in a SQLite file (`SUPPORT_TOOLS_DB`, default
`.temporal/support_tools.sqlite3`), standing in for a payment provider.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Literal

from activities.tools.tool_registry import ToolFailure, ToolRegistry

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"status": "delivered", "total_cents": 4599, "items": ["kettle"]},
    "A-1002": {"status": "shipped", "total_cents": 1299, "items": ["filters", "descaler"]},
}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order's status, total and items.

    Args:
        order_id: The order number, e.g. A-1001.
    """
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise ToolFailure(f"no order {order_id!r}", type="not_found", details={"order_id": order_id})
    return {"order_id": order_id, **order}


def issue_refund(
    order_id: str,
    amount_cents: int,
    reason: Literal["damaged", "late", "other"],
    idempotency_key: str,
) -> dict[str, Any]:
    """Refund part or all of an order. Each call refunds at most once, however often it is retried.

    Args:
        order_id: The order to refund.
        amount_cents: How much, in cents; at most the order's total.
        reason: Why.
        idempotency_key: Filled in by the worker, the same on every retry of this call;
            the model never sees it.
    """
    order = lookup_order(order_id)
    if not 0 < amount_cents <= order["total_cents"]:
        raise ToolFailure(f"amount_cents must be between 1 and {order['total_cents']}")
    with _database() as db:
        # The key is the same on every retry of this call: a retry finds the first refund.
        db.execute(
            "INSERT OR IGNORE INTO refunds (idempotency_key, refund_id, order_id, amount_cents, reason)"
            " VALUES (?, ?, ?, ?, ?)",
            (idempotency_key, f"rf_{uuid.uuid4().hex[:12]}", order["order_id"], amount_cents, reason),
        )
        row = db.execute(
            "SELECT refund_id, order_id, amount_cents FROM refunds WHERE idempotency_key = ?",
            (idempotency_key,),
        ).fetchone()
    refund_id, refunded_order, refunded = row
    return {"refund_id": refund_id, "order_id": refunded_order, "amount_cents": refunded}


def refunds_for(order_id: str) -> list[tuple[str, int]]:
    """(refund id, amount) of every refund of an order: how the tests check nothing ran twice."""
    with _database() as db:
        rows = db.execute(
            "SELECT refund_id, amount_cents FROM refunds WHERE order_id = ? ORDER BY rowid", (order_id,)
        ).fetchall()
    return [(str(refund_id), int(amount)) for refund_id, amount in rows]


def register(registry: ToolRegistry) -> None:
    """Register this module's tools (called by the worker for `--tools examples.support_tools`)."""
    registry.register(lookup_order)
    registry.register(issue_refund)


@contextmanager
def _database() -> Iterator[sqlite3.Connection]:
    """A connection in one transaction (committed on success), closed afterwards."""
    default = Path(__file__).resolve().parent.parent / ".temporal" / "support_tools.sqlite3"
    path = Path(os.environ.get("SUPPORT_TOOLS_DB", str(default)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, timeout=10)) as db, db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS refunds (idempotency_key TEXT PRIMARY KEY, refund_id TEXT NOT NULL,"
            " order_id TEXT NOT NULL, amount_cents INTEGER NOT NULL, reason TEXT NOT NULL)"
        )
        yield db
