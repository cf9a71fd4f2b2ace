"""The LLM call: `llm_call`, its door to litellm, and the models the worker answers itself (`models/`).

Beside it: the deltas a call streams, the message cache, `summarize`, `count_tokens`, the
request transformers. Importing this package imports nothing: only
`activities.llm._litellm_setup` imports litellm.
"""
