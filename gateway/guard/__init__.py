"""The guard's step before any route, and the routes a caller reaches before it has a token.

`admission` (who calls: a static token, `static_tokens`, or an OpenID provider's; the scopes each
operation needs, the request `rate`, the run `quotas`, the audit line), `resource_metadata`
(MCP's protected resource metadata and the challenges that point to it), `chat_signin` (the chat
page's sign-in config and token exchange). It stands on identity (`gateway.identity`), the
settings and the context; `gateway.app` puts it in front of every route.
"""
