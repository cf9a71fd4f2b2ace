"""Identity an organization can plug in: OpenID Connect tokens, scopes, MCP authorization, quotas, audit.

`admission` is the guard's step (who calls, may they, how much); `oidc` verifies a provider's
tokens; `scopes` and `operations` are what each call needs; `resource_metadata` is the MCP
authorization spec's document and challenges; `rate` and `quotas` count; `audit` writes the trail;
`settings` reads the environment.
"""
