"""The deployment's settings, read from environment variables: one reader, one error.

`env_values.py` holds the one error, `SettingsError` (a setting that cannot be used: one line
naming the variable, never echoing a secret), and the readers of one variable (`value`, `flag`).
Every setting of the product is read on them: `deployment.py` (payload store, encryption, TLS,
API key, sandbox, activity options, model media: what the worker, the CLI and the Python API
share; `tls.py` and `activity_overrides.py` parse parts of it), `webhook_policy.py` (where
webhooks may go, how they are signed), `attachment_policy.py` (what a deployment takes as
attachments), and the settings modules of the rooms above (`gateway.settings`,
`gateway.identity.settings`, `live.channel.live_url`, `hosting.tracing`,
`hosting.retention`) raise the same error.

It sits low: every folder of the product may import it; it imports `contracts` and
`conversation` only.
"""
