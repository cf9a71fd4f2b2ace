"""Identity an organization can plug in: who a caller is and what it may do, nothing else.

`principal` (a caller and what its name may be), `oidc` (verifying a provider's tokens), `scopes`
and `operations` (what each call needs), `audit` (the trail), `settings` (the environment's
identity settings). It imports no other gateway part but the refusals (`gateway.errors`); the
guard that applies it to every request is `gateway.guard`.
"""
