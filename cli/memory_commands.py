"""`client.py memory put|get|search|list|delete`: one principal's memory items in the long-term store.

NAMESPACE is the agent's memory namespace (`memory.namespace`, default the agent's name); the
items are --principal's (default `local`, the owner of runs the gateway did not start). The store
is the one `REACT_STORE_URL` names (default `.temporal/store.db`), or --store-url. Items print as
JSON, one a line. Bad input is refused by name (exit 1, nothing written).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from cli.common import say
from cli.params import argument, option
from clients.memory import Memory
from contracts.memory import LOCAL_PRINCIPAL, MemoryItem
from store import StoreError

T = TypeVar("T")

memory_app = typer.Typer(
    help="Long-term memory: an agent's remembered items (docs/memory.md).", no_args_is_help=True
)
NamespaceArg = Annotated[str, argument(help="The agent's memory namespace (default: the agent's name).")]
KeyArg = Annotated[str, argument(help="The item's key.")]
PrincipalOpt = Annotated[str, option(help="Whose items (a principal).")]
StoreOpt = Annotated[
    str | None, option(help="The store (default: REACT_STORE_URL, else .temporal/store.db).")
]


def _run(url: str | None, principal: str, call: Callable[[Memory], Awaitable[T]]) -> T:
    async def opened() -> T:
        async with Memory(url, principal) as memory:
            return await call(memory)

    try:
        return asyncio.run(opened())
    except StoreError as exc:
        say(f"refused ({exc.code}): {exc.message}", "red")
        raise typer.Exit(1) from None


def _line(item: MemoryItem) -> str:
    return json.dumps(item.model_dump(mode="json", exclude_none=True), ensure_ascii=False)


@memory_app.command("put")
def put(
    namespace: NamespaceArg,
    key: KeyArg,
    text: Annotated[str, argument(help="What to remember.")],
    value: Annotated[str | None, option(help="A JSON value kept with it.")] = None,
    ttl_s: Annotated[float | None, option(help="Seconds until it expires.")] = None,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
) -> None:
    """Remember TEXT under KEY (replacing what KEY held)."""
    try:
        data: Any = None if value is None else json.loads(value)
    except json.JSONDecodeError:
        say("refused (invalid_input): --value must be JSON", "red")
        raise typer.Exit(1) from None
    say(_line(_run(store_url, principal, lambda m: m.put(namespace, key, text, value=data, ttl_s=ttl_s))))


@memory_app.command("get")
def get(
    namespace: NamespaceArg,
    key: KeyArg,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
) -> None:
    """Print the item KEY (exit 1 when there is none)."""
    item = _run(store_url, principal, lambda m: m.get(namespace, key))
    if item is None:
        say(f"no memory item {key!r}", "red")
        raise typer.Exit(1)
    say(_line(item))


@memory_app.command("search")
def search(
    namespace: NamespaceArg,
    query: Annotated[str, argument(help="What to look for.")],
    limit: Annotated[int, option(help="How many items (1 to 50).")] = 5,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
) -> None:
    """Print the items best matching QUERY, best first."""
    for item in _run(store_url, principal, lambda m: m.search(namespace, query, limit=limit)):
        say(_line(item))


@memory_app.command("list")
def list_items(
    namespace: NamespaceArg,
    limit: Annotated[int, option(help="Items a page (1 to 100).")] = 50,
    cursor: Annotated[str | None, option(help="Where a previous page ended.")] = None,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
) -> None:
    """Print a page of the namespace's items by key (and the next page's cursor)."""
    page = _run(store_url, principal, lambda m: m.list(namespace, limit=limit, cursor=cursor))
    for item in page.items:
        say(_line(item))
    if page.next_cursor is not None:
        say(json.dumps({"next_cursor": page.next_cursor}))


@memory_app.command("delete")
def delete(
    namespace: NamespaceArg,
    key: KeyArg,
    principal: PrincipalOpt = LOCAL_PRINCIPAL,
    store_url: StoreOpt = None,
) -> None:
    """Forget the item KEY (exit 1 when there was none)."""
    if not _run(store_url, principal, lambda m: m.delete(namespace, key)):
        say(f"no memory item {key!r}", "red")
        raise typer.Exit(1)
    say(f"deleted {key}")
