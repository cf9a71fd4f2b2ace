"""The room's routes: the whole `/api/threads` resource, and the admin's read of every principal's threads."""

from starlette.routing import BaseRoute

from gateway.context import GatewayContext
from gateway.threads import admin, api, background, thread_webhook

__all__ = ["routes"]


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """`/api/threads...` (list, view, fork, reset, erase, `.../requests`, `.../webhook`), `/api/admin/...`."""
    owner = api.routes(ctx)
    return [*owner, *background.routes(ctx), *thread_webhook.routes(ctx), *admin.routes(ctx, owner)]
