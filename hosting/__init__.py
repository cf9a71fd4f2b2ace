"""The worker process and its hosting: the Temporal plugin, the connection, the embedded dev server."""
