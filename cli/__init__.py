"""The command-line client of Durable ReAct: `python client.py --help`.

Commands live in `cli.commands`; pure rendering in `cli.render` (unit-tested).
"""

from cli.commands import app

__all__ = ["app"]
