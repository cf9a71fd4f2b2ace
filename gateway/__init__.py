"""The HTTP gateway: AG-UI (and the other helpers' A2A, MCP and page routes) over the typed client.

`python gateway.py` runs it (docs/gateway.md). It talks to Temporal only through `clients`
and holds no state that matters: any number of gateways can serve the same sessions.
"""
