"""Terminal text building blocks: one-line capped previews and tables of plain text."""

from __future__ import annotations

import json

from pydantic import JsonValue
from rich.table import Table
from rich.text import Text

PREVIEW_CHARS = 80


def preview(value: JsonValue, limit: int = PREVIEW_CHARS) -> str:
    """One-line, length-capped text of a value, so a huge tool result cannot flood the terminal."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def new_table(title: str, *columns: str, header: bool = True) -> Table:
    """An empty table whose long cells wrap instead of being cut."""
    table = Table(title=title, show_header=header, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def add_row(table: Table, *cells: str) -> None:
    """Add a row of plain text: cells hold user and model content, never console markup."""
    table.add_row(*(Text(cell) for cell in cells))
