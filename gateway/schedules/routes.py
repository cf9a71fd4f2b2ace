"""The room's routes: the schedules API (`api`), background requests (`background`), a thread's webhook."""

from starlette.routing import BaseRoute

from gateway.context import GatewayContext
from gateway.schedules import api, background, thread_webhook

__all__ = ["routes"]


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """`/api/schedules...`, `/api/threads/{agent}/{thread}/requests...` and `.../webhook`."""
    return [*api.routes(ctx), *background.routes(ctx), *thread_webhook.routes(ctx)]
