"""Structured output in the worker: a final answer parsed against the client's schema, bounded."""
