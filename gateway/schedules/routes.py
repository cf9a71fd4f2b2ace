"""The room's routes: the schedules API (`api`) and the background requests API (`background`)."""

from starlette.routing import BaseRoute

from gateway.context import GatewayContext
from gateway.schedules import api, background

__all__ = ["routes"]


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """`/api/schedules...` and `/api/threads/{agent}/{thread}/requests...`."""
    return [*api.routes(ctx), *background.routes(ctx)]
