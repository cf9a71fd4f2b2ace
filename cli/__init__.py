"""The command-line client of Durable ReAct: `python client.py --help`.

Run commands live in `cli.commands`, session commands in `cli.session_commands`
(registered on the same app, with the `schedule` commands of `cli.schedule_commands`);
pure rendering in `cli.render` and `cli.render_session` (unit-tested).
"""

# The app of `cli.commands`, imported through the module that adds the session commands to it.
from cli.session_commands import app

__all__ = ["app"]
