"""The server's connection plumbing: how long headers may take, and how many connections may be open.

`connections` (uvicorn's h11 protocol, bounded), `log_rate` (the log lines a flood of them would
repeat, written once a window).
"""
